//! mm-lsp: the language-server client behind the lsp tool. No code yet: it
//! lands with the lsp issue. It must never know the model or the sink.

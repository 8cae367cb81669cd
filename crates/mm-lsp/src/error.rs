//! Why a call of the `lsp` tool failed, typed, so that callers branch on
//! `Ok`/`Err` and never read the text; its `Display` is the reference's
//! text for the model (docs/reference/tools.md).

/// A failed call of the language-server client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LspError {
    /// The call could not be answered: `[lsp: …]` says why (no server for
    /// the file, symbol not found, server failed or stopped, bad new name …).
    #[error("{0}")]
    Failed(String),
    /// A file of a prepared rename changed on disk since it was read:
    /// nothing was written (docs/design.md#preview-before-permission).
    #[error("{display} changed on disk since it was read; read it again")]
    ChangedOnDisk {
        /// The file, as messages show it.
        display: String,
    },
    /// A file of a rename could not be written; the text says which and why.
    #[error("{0}")]
    Write(String),
}

impl From<String> for LspError {
    /// A `[lsp: …]` text built below is a failure.
    fn from(text: String) -> Self {
        LspError::Failed(text)
    }
}

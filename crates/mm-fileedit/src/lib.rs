//! mm-fileedit: exact-replacement editing of text and the diffs shown for
//! it. Pure text in, text out: it never touches the disk (the tools do).

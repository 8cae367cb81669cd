//! mm-detector: the loop detector: counts identical (tool, input, output)
//! triples in a row and says when to warn and when to stop. It knows nothing
//! of what a tool does.

//! mm-skills: finding skills (markdown procedures) under the skills folder
//! and rendering the read_skill catalogue. It knows nothing of tools or the
//! model.

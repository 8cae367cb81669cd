//! The file-edit engine: `mm_fileedit::apply` never panics, and a
//! successful result is consistent: its replacements are sorted, disjoint
//! and on character boundaries, and its diff, applied to the original as a
//! patch, gives exactly the new text, with the counts and the first changed
//! line it claims. A refusal always says why.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mm_fileedit::{Diff, Edit, apply, refusal_text};

#[derive(Arbitrary, Debug)]
enum Old {
    /// A piece of the original (found at least once).
    Slice { start: u16, len: u8 },
    /// Any text.
    Text(String),
}

#[derive(Arbitrary, Debug)]
struct EditSpec {
    old: Old,
    new: String,
}

#[derive(Arbitrary, Debug)]
struct Input {
    edits: Vec<EditSpec>,
    original: String,
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn lines(s: &str) -> Vec<&str> {
    s.split_inclusive('\n').collect()
}

/// `start,count` of one side of a hunk header.
fn range(part: &str) -> (usize, usize) {
    let (start, count) = part.split_once(',').expect("start,count");
    (start.parse().expect("start"), count.parse().expect("count"))
}

/// Apply `d` to `old` as a patch; it must give `new`, and say so truly.
fn check_diff(old: &str, new: &str, d: &Diff) {
    let (ol, nl) = (lines(old), lines(new));
    assert!(d.text.is_empty() || d.text.ends_with('\n'));
    let text = lines(&d.text);
    let mut rebuilt = String::new();
    let (mut old_pos, mut i) = (0usize, 0usize);
    let (mut added, mut deleted) = (0usize, 0usize);
    let mut first: Option<usize> = None;
    while i < text.len() {
        let header = text[i]
            .strip_prefix("@@ -")
            .and_then(|h| h.strip_suffix(" @@\n"))
            .unwrap_or_else(|| panic!("not a hunk header: {:?}", text[i]));
        let (o, n) = header.split_once(" +").expect("two ranges");
        let ((os, oc), (ns, nc)) = (range(o), range(n));
        let old_start = if oc == 0 { os } else { os - 1 };
        let new_start = if nc == 0 { ns } else { ns - 1 };
        assert!(old_start >= old_pos, "hunks out of order");
        rebuilt.push_str(&ol[old_pos..old_start].concat());
        i += 1;
        let (mut old_side, mut new_side) = (Vec::new(), Vec::new());
        while i < text.len() && !text[i].starts_with("@@ ") {
            let line = text[i];
            let (sign, body) = line.split_at(1);
            let mut body = body.to_owned();
            i += 1;
            if text.get(i) == Some(&"\\ No newline at end of file\n") {
                assert_eq!(body.pop(), Some('\n'));
                i += 1;
            }
            match sign {
                " " => {
                    old_side.push(body.clone());
                    new_side.push(body);
                }
                "-" => {
                    first.get_or_insert(old_start + old_side.len() + 1);
                    deleted += 1;
                    old_side.push(body);
                }
                "+" => {
                    first.get_or_insert(new_start + new_side.len() + 1);
                    added += 1;
                    new_side.push(body);
                }
                _ => panic!("bad diff line {line:?}"),
            }
        }
        assert_eq!((old_side.len(), new_side.len()), (oc, nc), "hunk counts");
        assert_eq!(
            old_side.concat(),
            ol[old_start..old_start + oc].concat(),
            "old side"
        );
        assert_eq!(
            new_side.concat(),
            nl[new_start..new_start + nc].concat(),
            "new side"
        );
        rebuilt.push_str(&new_side.concat());
        old_pos = old_start + oc;
    }
    rebuilt.push_str(&ol[old_pos..].concat());
    assert_eq!(rebuilt, new, "the diff does not give the new text");
    assert_eq!((added, deleted), (d.added, d.deleted), "counts");
    assert_eq!(first, d.first_line, "first changed line");
    assert_eq!(d.is_empty(), old == new);
}

fuzz_target!(|input: Input| {
    let original = &input.original;
    let edits: Vec<Edit> = input
        .edits
        .iter()
        .take(8)
        .map(|spec| {
            let old = match &spec.old {
                Old::Slice { start, len } => {
                    let s = floor_boundary(original, usize::from(*start));
                    let e = floor_boundary(original, s + usize::from(*len)).max(s);
                    original[s..e].to_owned()
                }
                Old::Text(t) => t.clone(),
            };
            Edit::new(old, spec.new.clone())
        })
        .collect();
    match apply(original, &edits) {
        Ok(applied) => {
            let mut at = 0;
            for r in &applied.replacements {
                assert!(at <= r.range.start && r.range.start <= r.range.end);
                assert!(r.range.end <= original.len());
                assert!(original.is_char_boundary(r.range.start));
                assert!(original.is_char_boundary(r.range.end));
                at = r.range.end;
            }
            let new = applied.text(original);
            assert_eq!(applied.pieces(original).concat(), new);
            check_diff(original, &new, &applied.diff);
        }
        Err(refusals) => {
            assert!(!refusals.is_empty());
            assert!(!refusal_text(&refusals, "f.txt", edits.len()).is_empty());
        }
    }
});

//! README and the guide (`docs/`) stay in step with the code:
//! - every relative link (and its `#anchor`, a heading of the target) resolves;
//! - README's table of examples lists exactly `ordo/examples/*.rs` and `examples/c/*.c`;
//! - every C name of ordo's (`ordo_…`) that `docs/c-abi.md` mentions is declared in `ordo.h`;
//! - every code block is compiled or run by a test: Rust blocks as doctests of the `ordo` crate
//!   (the file is included in `ordo/src/lib.rs`), README's C quick start by
//!   `ffi/tests/c_programs.rs`, the C build blocks by `tests/readme.rs`, the tracing chapter's
//!   commands here, and README's two commands by CI itself (`.ci/run`, verbatim).

use std::path::{Path, PathBuf};

use ordo_tests::{program, workspace};

/// README and every chapter of the guide, with their text.
fn pages() -> Vec<(PathBuf, String)> {
    let mut pages = vec![workspace().join("README.md")];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(workspace().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    pages.extend(chapters);
    pages.push(workspace().join("tests/gpu/RESULTS.md"));
    pages.into_iter().map(|p| (p.clone(), std::fs::read_to_string(&p).expect("a page of the docs"))).collect()
}

/// A fenced code block: its language tag, first line number and text.
struct Block {
    lang: String,
    line: usize,
    text: String,
}

/// The page's fenced code blocks, and its prose (the lines outside them).
fn split(page: &str) -> (Vec<Block>, Vec<(usize, &str)>) {
    let (mut blocks, mut prose) = (Vec::new(), Vec::new());
    let mut open: Option<Block> = None;
    for (i, line) in page.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => open = Some(Block { lang: lang.trim().to_owned(), line: i + 1, text: String::new() }),
            (Some(_), Some(_)) => blocks.push(open.take().expect("open")),
            (Some(b), None) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => prose.push((i + 1, line)),
        }
    }
    assert!(open.is_none(), "a code block is not closed");
    (blocks, prose)
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings.
fn anchors(page: &str) -> Vec<String> {
    split(page).1.iter().filter(|(_, l)| l.starts_with('#')).map(|(_, l)| slug(l.trim_start_matches('#'))).collect()
}

/// Markdown links `[text](target)` on one line of prose (code spans skipped).
fn links(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => in_code = !in_code,
            b']' if !in_code && bytes.get(i + 1) == Some(&b'(') => {
                if let Some(end) = line[i + 2..].find(')') {
                    out.push(line[i + 2..i + 2 + end].to_owned());
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for (path, text) in pages() {
        for (n, line) in split(&text).1 {
            for target in links(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
                let dest = if file.is_empty() { path.clone() } else { path.parent().expect("a folder").join(file) };
                if !dest.exists() {
                    broken.push(format!("{}:{n}: {target}: no such file", path.display()));
                } else if !anchor.is_empty() {
                    let page = std::fs::read_to_string(&dest).unwrap_or_default();
                    if !anchors(&page).iter().any(|a| a == anchor) {
                        broken.push(format!("{}:{n}: {target}: no heading with that anchor", path.display()));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 30, "only {checked} links found: is the parser broken?");
}

#[test]
fn readme_lists_every_example_and_no_other() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).expect("README.md");
    let listed: Vec<String> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| [`"))
        .filter_map(|l| l.split_once("`](").map(|(_, rest)| rest.split(')').next().unwrap_or("").to_owned()))
        .collect();
    let mut on_disk = Vec::new();
    for (dir, ext) in [("ordo/examples", "rs"), ("examples/c", "c")] {
        for e in std::fs::read_dir(workspace().join(dir)).expect("an examples folder") {
            let p = e.expect("an entry").path();
            if p.extension().is_some_and(|x| x == ext) {
                on_disk.push(format!("{dir}/{}", p.file_name().expect("a name").to_string_lossy()));
            }
        }
    }
    let (mut listed, mut on_disk) = (listed, on_disk);
    listed.sort();
    on_disk.sort();
    assert_eq!(listed, on_disk, "README's table of examples against ordo/examples/ and examples/c/");
}

/// Names `ordo_…` in a text, outside Rust paths (`ordo_core::…`) and file names.
fn c_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("ordo_") {
        let before = rest[..i].chars().last();
        let tail = &rest[i..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        let name = &tail[..end];
        let after = &tail[end..];
        let part_of_something_else =
            before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/' || c == '-' || c == '.');
        if !part_of_something_else && !after.starts_with("::") && !after.starts_with('.') {
            names.push(name.to_owned());
        }
        rest = &tail[end..];
    }
    names
}

#[test]
fn the_c_names_of_the_c_abi_chapter_are_in_the_header() {
    let header = std::fs::read_to_string(workspace().join("ffi/include/ordo.h")).expect("ordo.h");
    let chapter = std::fs::read_to_string(workspace().join("docs/c-abi.md")).expect("docs/c-abi.md");
    // What a host image exports (the caller's symbols, not ordo's), and Rust crates.
    let not_ordo_h = ["ordo_host_kernels", "ordo_host_kernel_count", "ordo_ffi", "ordo_core", "ordo_testing"];
    let names = c_names(&chapter);
    assert!(names.len() > 30, "only {} names found: is the scan broken?", names.len());
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !not_ordo_h.contains(&n.as_str()))
        .filter(|n| !header.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == n.as_str()))
        .collect();
    assert!(missing.is_empty(), "named in docs/c-abi.md but not declared in ordo.h: {missing:?}");
}

#[test]
fn every_code_block_is_compiled_or_run_by_a_test() {
    let lib = std::fs::read_to_string(workspace().join("ordo/src/lib.rs")).expect("ordo/src/lib.rs");
    let ci = std::fs::read_to_string(workspace().join(".ci/run")).expect(".ci/run");
    let mut unchecked = Vec::new();
    for (path, text) in pages() {
        let rel = path.strip_prefix(workspace()).unwrap_or(&path).to_string_lossy().into_owned();
        let name = path.file_name().expect("a name").to_string_lossy().into_owned();
        for b in split(&text).0 {
            let lang = b.lang.split(',').next().unwrap_or("");
            let checked = match lang {
                // Doctests of the `ordo` crate: the page is included there, and not ignored.
                "rust" => {
                    lib.contains(&format!("include_str!(\"../../{rel}\")"))
                        && !b.lang.contains("ignore")
                        && !b.lang.contains("no_run")
                }
                // README's C quick start: compiled and run by ffi/tests/c_programs.rs.
                "c" => name == "README.md" && text[..text.find(&b.text).unwrap_or(0)].contains("## Quick start (C)"),
                "sh" => {
                    // The C build blocks (tests/readme.rs), the tracing chapter's (below), or
                    // commands CI runs as written.
                    b.text.starts_with("cargo build --release -p ordo-clib")
                        || name == "tracing.md"
                        || b.text.lines().filter(|l| !l.trim().is_empty()).all(|l| {
                            ci.lines().any(|c| c.trim() == l.trim() || c.trim().starts_with(&format!("{} ", l.trim())))
                        })
                }
                _ => false,
            };
            if !checked {
                unchecked.push(format!("{rel}:{}: ```{}", b.line, b.lang));
            }
        }
    }
    assert!(unchecked.is_empty(), "code blocks no test compiles or runs:\n{}", unchecked.join("\n"));
}

#[test]
fn the_tracing_chapters_commands_run_as_written() {
    let chapter = std::fs::read_to_string(workspace().join("docs/tracing.md")).expect("docs/tracing.md");
    let blocks: Vec<Block> = split(&chapter).0.into_iter().filter(|b| b.lang == "sh").collect();
    assert_eq!(blocks.len(), 1, "the tracing chapter's one block of commands");
    // Run inside the workspace (cargo finds it from there), in a folder of its own.
    let dir: &Path = &workspace().join("target/docs-tracing");
    std::fs::create_dir_all(dir).expect("target/docs-tracing");
    let _ = std::fs::remove_file(dir.join("run.json"));
    let out = program("bash")
        .args(["-euo", "pipefail", "-c", &blocks[0].text])
        .current_dir(dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("ORDO_TRACE")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the tracing chapter's commands failed:\n{}\n{stdout}\n{}",
        blocks[0].text,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.join("run.json").exists(), "no run.json written");
    assert!(stdout.contains("vector_add_f32"), "the summary names the demo's kernel:\n{stdout}");
}

//! The one import rule of `docs/architecture.md` ("Layers and seams"): imports point down.
//!
//! This test reads the source trees of the library (`crates/spidx/src`) and of the CLI
//! (`crates/spidx-cli/src`), finds every import between their files (`use crate::...`,
//! `use super::...`, `use self::...`, a child module's name, and the same paths written in
//! code, e.g. `crate::store::header::seal_json(..)`), follows re-exports (`pub use`) to the
//! file that declares the item, and fails
//! * when a library file imports from a layer above its own ([`LAYERS`]), and
//! * when files import each other through any path (a circle),
//!
//! naming the files and the imports at fault. A submodule may use what its ancestor modules
//! declare (`super::`; Rust's nesting: the children see their parent's items, and a parent
//! module file is where its children's shared vocabulary lives): those imports are not
//! counted. Test code (`#[cfg(test)]` items and the files of test modules) is not the
//! library's and may reach anywhere. Comments, doc links and string literals are not
//! imports.
//!
//! [`KNOWN_CIRCLES`] and [`KNOWN_UPWARD`] name what is left to fix; a fix must take its entry
//! out (an entry that no longer holds fails too), so the lists only shrink.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The library's layers, top first (`CLI → experiment → spatial → query → data → index →
/// store → cache → device → geom`, with the modules beside them). A file may import from
/// its own layer's modules and from the layers below; `""` is the crate root (`lib.rs`).
const LAYERS: &[&[&str]] = &[
    &["experiment", "calibrate"],
    &["spatial"],
    &["query"],
    &["data"],
    &["index", "objects"],
    &["store"],
    &["cache", "iotest"],
    &["device"],
    &["node"],
    &["geom"],
    &["units", "clock", "error", ""],
];

/// Circles between files not yet taken apart (each one the set of files, relative to
/// `crates/`, that import each other). Remove an entry when its circle is gone.
const KNOWN_CIRCLES: &[&[&str]] = &[
    // The hard disk model's geometry and its configuration use each other.
    &[
        "spidx/src/device/hdd/config.rs",
        "spidx/src/device/hdd/geometry.rs",
    ],
];

/// Imports from a lower layer to a higher one not yet removed (importing file, imported
/// file, relative to `crates/`). Remove an entry when its import is gone.
const KNOWN_UPWARD: &[(&str, &str)] = &[];

/// One source file: its path, module path and what it imports.
struct SourceFile {
    /// Path relative to the crate's `src/`.
    rel: String,
    /// The module path (`["store", "buffered"]` for `store/buffered/mod.rs`).
    module: Vec<String>,
    /// The source with comments, strings and test code blanked.
    code: String,
    /// Test-only (declared under `#[cfg(test)]`).
    test: bool,
}

/// An import found in a file: the absolute module path it names, whether it is a
/// re-export, the name it is known by, and the line it stands on.
#[derive(Clone)]
struct Import {
    path: Vec<String>,
    public: bool,
    alias: String,
    line: usize,
}

/// A crate's source tree: its files by module path and their imports.
struct Tree {
    crate_dir: String,
    files: Vec<SourceFile>,
    by_module: BTreeMap<Vec<String>, usize>,
    imports: Vec<Vec<Import>>,
    /// `#[macro_export]` macros: name -> the file that declares it.
    macros: BTreeMap<String, usize>,
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file from its place in `src/` (`a/b.rs` and `a/b/mod.rs` are
/// `a::b`; `lib.rs` and `main.rs` the root).
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Blanks comments and the insides of string and character literals (byte for byte, lines
/// kept), so that only code is left.
fn blank_comments_and_strings(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let word_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if !word_before && (b[i] == b'r' || b[i..].starts_with(b"br")) && {
            let s = if b[i] == b'b' { i + 2 } else { i + 1 };
            let hashes = b[s..].iter().take_while(|&&c| c == b'#').count();
            b.get(s + hashes) == Some(&b'"')
        } {
            let s = if b[i] == b'b' { i + 2 } else { i + 1 };
            let hashes = b[s..].iter().take_while(|&&c| c == b'#').count();
            let open = s + hashes + 1;
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let end = (open..b.len())
                .find(|&j| b[j..].starts_with(&close))
                .unwrap_or(b.len());
            blank(&mut out, open, end);
            i = end + close.len();
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j.min(b.len()));
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', 'é'), or else a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                (i + 2..b.len()).find(|&j| b[j] == b'\'')
            } else {
                let len = match b.get(i + 1) {
                    Some(&c) if c >= 0xF0 => 4,
                    Some(&c) if c >= 0xE0 => 3,
                    Some(&c) if c >= 0xC0 => 2,
                    _ => 1,
                };
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 1 + len)
            };
            match end {
                Some(e) => {
                    blank(&mut out, i + 1, e);
                    i = e + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8: only ASCII is written")
}

/// A token of blanked code: a word, `::`, or one punctuation character; with its line.
fn tokens(code: &str) -> Vec<(String, usize)> {
    let b = code.as_bytes();
    let (mut out, mut line, mut i) = (Vec::new(), 1, 0);
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() || !c.is_ascii() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((code[s..i].to_string(), line));
        } else if b[i..].starts_with(b"::") {
            out.push(("::".into(), line));
            i += 2;
        } else {
            out.push(((c as char).to_string(), line));
            i += 1;
        }
    }
    out
}

/// The end (exclusive token index) of the item starting at `i`: its `;`, or its block's
/// closing brace.
fn item_end(toks: &[(String, usize)], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < toks.len() {
        match toks[i].0.as_str() {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            ";" if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Whether an attribute's tokens (`#`, `[`, ..., `]`) make the item test-only.
fn is_test_cfg(attr: &[(String, usize)]) -> bool {
    let words: Vec<&str> = attr.iter().map(|t| t.0.as_str()).collect();
    let text = words.concat();
    text == "#[cfg(test)]" || text.starts_with("#[cfg(any(test,")
}

/// Blanks the test-only items of blanked code (the tokens after `#[cfg(test)]` up to the
/// end of the item) and returns the test-only child modules declared with `mod NAME;`
/// (with their `#[path]`, if any).
fn drop_test_items(code: &str, original: &str) -> (String, Vec<(String, Option<String>)>) {
    let toks = tokens(code);
    let lines: Vec<&str> = code.lines().collect();
    let mut blanked_lines = BTreeSet::new();
    let mut test_mods = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if toks[i].0 == "#" && toks.get(i + 1).is_some_and(|t| t.0 == "[") {
            // Read the attributes before the item.
            let mut test = false;
            let mut path = None;
            let start_line = toks[i].1;
            let mut j = i;
            while toks.get(j).is_some_and(|t| t.0 == "#")
                && toks.get(j + 1).is_some_and(|t| t.0 == "[")
            {
                let mut depth = 0;
                let s = j;
                loop {
                    match toks[j].0.as_str() {
                        "[" => depth += 1,
                        "]" => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                j += 1;
                test |= is_test_cfg(&toks[s..j]);
                if toks[s + 2].0 == "path" {
                    // The path's string was blanked: read it from the original line.
                    let line = original.lines().nth(toks[s].1 - 1).unwrap_or("");
                    path = line.split('"').nth(1).map(String::from);
                }
            }
            if test {
                let end = item_end(&toks, j);
                let words: Vec<&str> = toks[j..end].iter().map(|t| t.0.as_str()).collect();
                if let Some(p) = words.iter().position(|&w| w == "mod") {
                    if words.get(p + 2) == Some(&";") {
                        test_mods.push((words[p + 1].to_string(), path));
                    }
                }
                let end_line = toks[end - 1].1;
                blanked_lines.extend(start_line..=end_line);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    let kept: Vec<&str> = lines
        .iter()
        .enumerate()
        .map(|(n, l)| {
            if blanked_lines.contains(&(n + 1)) {
                ""
            } else {
                *l
            }
        })
        .collect();
    (kept.join("\n"), test_mods)
}

/// Parses a use tree starting at token `i` into `out` (paths with their alias).
fn use_tree(
    toks: &[(String, usize)],
    i: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, String)>,
) {
    let mut path = prefix;
    loop {
        let t = toks[*i].0.as_str();
        match t {
            "{" => {
                *i += 1;
                while toks[*i].0 != "}" {
                    use_tree(toks, i, path.clone(), out);
                    if toks[*i].0 == "," {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            "*" => {
                *i += 1;
                path.push("*".into());
                out.push((path, "*".into()));
                return;
            }
            "::" => *i += 1,
            _ => {
                path.push(t.to_string());
                *i += 1;
                if toks[*i].0 == "::" {
                    *i += 1;
                    continue;
                }
                let mut alias = t.to_string();
                if toks[*i].0 == "as" {
                    alias = toks[*i + 1].0.clone();
                    *i += 2;
                }
                if alias == "self" {
                    path.pop();
                    alias = path.last().cloned().unwrap_or_default();
                }
                out.push((path, alias));
                return;
            }
        }
    }
}

impl Tree {
    fn read(crates: &Path, name: &str) -> Tree {
        let src = crates.join(name).join("src");
        let mut paths = Vec::new();
        rs_files(&src, &mut paths);
        paths.sort();
        let mut files = Vec::new();
        let mut test_files = BTreeSet::new();
        for p in &paths {
            let rel = p
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let original = std::fs::read_to_string(p).unwrap();
            let blanked = blank_comments_and_strings(&original);
            let (code, test_mods) = drop_test_items(&blanked, &original);
            let module = module_of(&rel);
            // Where this file's child modules live.
            let dir = Path::new(&rel)
                .parent()
                .unwrap_or(Path::new(""))
                .to_path_buf();
            let child_dir = if matches!(
                Path::new(&rel).file_stem().and_then(|s| s.to_str()),
                Some("mod" | "lib" | "main")
            ) {
                dir.clone()
            } else {
                dir.join(Path::new(&rel).file_stem().unwrap())
            };
            for (m, path) in test_mods {
                let target = match path {
                    Some(p) => normalize(&dir.join(p)),
                    None => {
                        let a = child_dir.join(format!("{m}.rs"));
                        if src.join(&a).exists() {
                            normalize(&a)
                        } else {
                            normalize(&child_dir.join(&m).join("mod.rs"))
                        }
                    }
                };
                test_files.insert(target);
            }
            let whole_file_test = blanked.contains("#![cfg(test)]");
            files.push(SourceFile {
                rel,
                module,
                code,
                test: whole_file_test,
            });
        }
        // Test modules' own children are test code too.
        for f in &mut files {
            let is_test = test_files.iter().any(|t| {
                f.rel == *t || {
                    let stem = t.trim_end_matches(".rs").trim_end_matches("/mod");
                    f.rel.starts_with(&format!("{stem}/"))
                }
            });
            f.test |= is_test;
        }
        let by_module = files
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.test)
            .map(|(i, f)| (f.module.clone(), i))
            .collect();
        let mut tree = Tree {
            crate_dir: name.to_string(),
            files,
            by_module,
            imports: Vec::new(),
            macros: BTreeMap::new(),
        };
        tree.imports = (0..tree.files.len()).map(|i| tree.imports_of(i)).collect();
        for (i, f) in tree.files.iter().enumerate() {
            let toks = tokens(&f.code);
            for k in 0..toks.len().saturating_sub(2) {
                if toks[k].0 == "#" && toks[k + 2].0 == "macro_export" {
                    let rules = toks[k..].iter().position(|t| t.0 == "macro_rules");
                    if let Some(name) = rules.and_then(|r| toks.get(k + r + 2)) {
                        tree.macros.insert(name.0.clone(), i);
                    }
                }
            }
        }
        tree
    }

    /// The absolute module path `segments` names from inside module `module` (`None`: a
    /// path outside the crate: std, a dependency, a local name).
    fn absolute(&self, module: &[String], segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?.as_str();
        match first {
            "crate" => Some(segments[1..].to_vec()),
            "self" => Some([module, &segments[1..]].concat()),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let base = &module[..module.len().saturating_sub(ups)];
                Some([base, &segments[ups..]].concat())
            }
            _ => {
                let child = [module, &segments[..1]].concat();
                self.by_module
                    .contains_key(&child)
                    .then(|| [module, segments].concat())
            }
        }
    }

    fn imports_of(&self, i: usize) -> Vec<Import> {
        let f = &self.files[i];
        if f.test {
            return Vec::new();
        }
        let toks = tokens(&f.code);
        let mut out = Vec::new();
        let mut k = 0;
        while k < toks.len() {
            let t = toks[k].0.as_str();
            let prev = k.checked_sub(1).map(|p| toks[p].0.as_str());
            if t == "use" && matches!(prev, None | Some(";" | "{" | "}" | "]" | ")" | "pub")) {
                let public = prev == Some("pub")
                    || (prev == Some(")")
                        && k >= 3
                        && toks[..k].iter().rev().nth(3).is_some_and(|t| t.0 == "pub"));
                let line = toks[k].1;
                k += 1;
                let mut paths = Vec::new();
                use_tree(&toks, &mut k, Vec::new(), &mut paths);
                for (p, alias) in paths {
                    if let Some(path) = self.absolute(&f.module, &p) {
                        out.push(Import {
                            path,
                            public,
                            alias,
                            line,
                        });
                    }
                }
                continue;
            }
            // A path written in code: `crate::a::b`, `super::x`, `self::y`, `child::z`.
            let starts_path = toks.get(k + 1).is_some_and(|n| n.0 == "::")
                && prev != Some("::")
                && t.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
            if starts_path {
                let mut segs = vec![t.to_string()];
                let mut j = k + 1;
                while toks.get(j).is_some_and(|x| x.0 == "::")
                    && toks
                        .get(j + 1)
                        .is_some_and(|x| x.0.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                {
                    segs.push(toks[j + 1].0.clone());
                    j += 2;
                }
                if let Some(path) = self.absolute(&f.module, &segs) {
                    let alias = path.last().cloned().unwrap_or_default();
                    out.push(Import {
                        path,
                        public: false,
                        alias,
                        line: toks[k].1,
                    });
                }
                k = j;
                continue;
            }
            k += 1;
        }
        out
    }

    /// The file that declares what `path` names, following re-exports.
    fn resolve(&self, path: &[String], depth: usize) -> Option<usize> {
        let n = (0..=path.len())
            .rev()
            .find(|&n| self.by_module.contains_key(&path[..n]))?;
        let file = self.by_module[&path[..n]];
        let Some(name) = path.get(n) else {
            return Some(file);
        };
        if n == 0 {
            if let Some(&m) = self.macros.get(name) {
                return Some(m);
            }
        }
        if depth < 16 {
            for imp in &self.imports[file] {
                if imp.public && imp.alias == *name {
                    return self.resolve(&imp.path, depth + 1).or(Some(file));
                }
            }
        }
        Some(file)
    }

    /// Whether module `a` lies inside module `b` (or is it).
    fn within(a: &[String], b: &[String]) -> bool {
        a.len() >= b.len() && a[..b.len()] == *b
    }

    /// The counted imports between files: (from, to) -> the first line of `from` importing.
    fn edges(&self) -> BTreeMap<(usize, usize), usize> {
        let mut edges = BTreeMap::new();
        for (i, imps) in self.imports.iter().enumerate() {
            for imp in imps {
                let Some(j) = self.resolve(&imp.path, 0) else {
                    continue;
                };
                if i == j || Self::within(&self.files[i].module, &self.files[j].module) {
                    continue; // the file itself, or an ancestor module's declarations
                }
                edges.entry((i, j)).or_insert(imp.line);
            }
        }
        edges
    }

    fn name(&self, i: usize) -> String {
        format!("{}/src/{}", self.crate_dir, self.files[i].rel)
    }

    /// The circles: strongly connected sets of two or more files (Tarjan).
    fn circles(&self, edges: &BTreeMap<(usize, usize), usize>) -> Vec<Vec<usize>> {
        let n = self.files.len();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(a, b) in edges.keys() {
            next[a].push(b);
        }
        struct State {
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            stack: Vec<usize>,
            on: Vec<bool>,
            count: usize,
            out: Vec<Vec<usize>>,
        }
        fn visit(v: usize, next: &[Vec<usize>], s: &mut State) {
            s.index[v] = Some(s.count);
            s.low[v] = s.count;
            s.count += 1;
            s.stack.push(v);
            s.on[v] = true;
            for &w in &next[v] {
                match s.index[w] {
                    None => {
                        visit(w, next, s);
                        s.low[v] = s.low[v].min(s.low[w]);
                    }
                    Some(iw) if s.on[w] => s.low[v] = s.low[v].min(iw),
                    _ => {}
                }
            }
            if Some(s.low[v]) == s.index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = s.stack.pop().unwrap();
                    s.on[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    s.out.push(comp);
                }
            }
        }
        let mut s = State {
            index: vec![None; n],
            low: vec![0; n],
            stack: Vec::new(),
            on: vec![false; n],
            count: 0,
            out: Vec::new(),
        };
        for v in 0..n {
            if s.index[v].is_none() {
                visit(v, &next, &mut s);
            }
        }
        s.out
    }
}

fn normalize(p: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(s) => parts.push(s.to_string_lossy().into()),
            _ => {}
        }
    }
    parts.join("/")
}

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The layer of a library file (its index in [`LAYERS`]).
fn layer(f: &SourceFile) -> usize {
    let top = f.module.first().map_or("", String::as_str);
    LAYERS
        .iter()
        .position(|l| l.contains(&top))
        .unwrap_or_else(|| {
            panic!(
                "module `{top}` ({}) is in no layer: add it to LAYERS",
                f.rel
            )
        })
}

/// Checks the circles of `tree`: each found must be known, each known must still be found.
fn check_circles(tree: &Tree, problems: &mut String) {
    let edges = tree.edges();
    let known: BTreeSet<BTreeSet<&str>> = KNOWN_CIRCLES
        .iter()
        .map(|c| c.iter().copied().collect())
        .collect();
    let mut found = BTreeSet::new();
    for comp in tree.circles(&edges) {
        let names: Vec<String> = comp.iter().map(|&i| tree.name(i)).collect();
        let set: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        if known.contains(&set) {
            found.insert(
                set.into_iter()
                    .map(String::from)
                    .collect::<BTreeSet<String>>(),
            );
            continue;
        }
        let _ = writeln!(problems, "a circle of {} files:", comp.len());
        for &a in &comp {
            for &b in &comp {
                if let Some(line) = edges.get(&(a, b)) {
                    let _ = writeln!(
                        problems,
                        "  {}:{line} imports {}",
                        tree.name(a),
                        tree.name(b)
                    );
                }
            }
        }
    }
    for c in KNOWN_CIRCLES {
        if c.first()
            .is_some_and(|f| f.starts_with(&format!("{}/", tree.crate_dir)))
            && !found.contains(
                &c.iter()
                    .map(|s| s.to_string())
                    .collect::<BTreeSet<String>>(),
            )
        {
            let _ = writeln!(
                problems,
                "KNOWN_CIRCLES lists {c:?}, no longer a circle: remove it"
            );
        }
    }
}

#[test]
fn library_imports_point_down_and_close_no_circle() {
    let tree = Tree::read(&crates_dir(), "spidx");
    let mut problems = String::new();
    let edges = tree.edges();
    let mut upward_found = BTreeSet::new();
    for (&(a, b), line) in &edges {
        let (fa, fb) = (&tree.files[a], &tree.files[b]);
        if layer(fb) < layer(fa) {
            let pair = (tree.name(a), tree.name(b));
            if KNOWN_UPWARD
                .iter()
                .any(|&(x, y)| x == pair.0 && y == pair.1)
            {
                upward_found.insert(pair);
                continue;
            }
            let _ = writeln!(
                problems,
                "{}:{line} imports {}: layer `{}` is above `{}` (docs/architecture.md)",
                pair.0,
                pair.1,
                fb.module.first().map_or("crate root", String::as_str),
                fa.module.first().map_or("crate root", String::as_str),
            );
        }
    }
    for &(x, y) in KNOWN_UPWARD {
        if !upward_found.contains(&(x.to_string(), y.to_string())) {
            let _ = writeln!(
                problems,
                "KNOWN_UPWARD lists {x} -> {y}, no longer found: remove it"
            );
        }
    }
    check_circles(&tree, &mut problems);
    assert!(
        problems.is_empty(),
        "imports must point down (docs/architecture.md):\n{problems}"
    );
}

#[test]
fn cli_files_close_no_circle() {
    let tree = Tree::read(&crates_dir(), "spidx-cli");
    let mut problems = String::new();
    check_circles(&tree, &mut problems);
    assert!(
        problems.is_empty(),
        "imports must point down (docs/architecture.md):\n{problems}"
    );
}

/// The reader itself: comments, strings and test code are not imports; re-exports are
/// followed; a parent's items seen from a child are not counted.
#[test]
fn the_reader_sees_imports_only_in_code() {
    let code = "// use crate::a::B;\nlet s = \"crate::a::b\"; let c = '{';\n#[cfg(test)]\nmod tests {\n    use crate::z::Z;\n}\nuse crate::{a::{B, c as D}, e::*};\nfn f<'a>() { crate::g::h(); }\n";
    let blanked = blank_comments_and_strings(code);
    assert_eq!(blanked.len(), code.len());
    let (kept, test_mods) = drop_test_items(&blanked, code);
    assert!(test_mods.is_empty());
    assert!(!kept.contains("crate::z"), "{kept}");
    assert!(!kept.contains("crate::a::b\""), "{kept}");
    let toks = tokens(&kept);
    let mut k = toks.iter().position(|t| t.0 == "use").unwrap() + 1;
    let mut paths = Vec::new();
    use_tree(&toks, &mut k, Vec::new(), &mut paths);
    let names: Vec<String> = paths
        .iter()
        .map(|(p, a)| format!("{}={a}", p.join("::")))
        .collect();
    assert_eq!(names, ["crate::a::B=B", "crate::a::c=D", "crate::e::*=*"]);
    assert!(kept.contains("crate::g::h"));
    let (_, mods) = drop_test_items(
        &blank_comments_and_strings("#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod tests;\n"),
        "#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod tests;\n",
    );
    assert_eq!(
        mods,
        [("tests".to_string(), Some("x_tests.rs".to_string()))]
    );
}

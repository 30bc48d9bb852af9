//! The crates' module graph has no cycles (docs/architecture.md says each module uses only those
//! above it). Nodes are source files, a `mod.rs` standing for its folder; an edge goes from a
//! file to another wherever it names an item of the other through `use crate::…`, an inline
//! `crate::…` path or `super::…` (`super` inside an inline module such as `mod tests` is the
//! file itself). `mod` declarations are not edges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// The module path of a source file under `src`: `query/plan.rs` is `query::plan`,
/// `query/mod.rs` is `query`, `lib.rs` and `main.rs` are the crate.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source with comments, strings and character literals blanked (same length, so that
/// positions stay), leaving code only.
fn code_only(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = i;
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
        } else if rest.starts_with(b"r\"") || rest.starts_with(b"r#") {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let start = i + 2 + hashes;
            let end = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| start + p + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\''), or a lifetime ('a), which stays.
            let end = if rest.get(1) == Some(&b'\\') {
                rest[2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|p| i + 3 + p)
            } else {
                let len = std::str::from_utf8(&rest[1..])
                    .ok()
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(5)]).ok())
                    .and_then(|s| s.chars().next())
                    .map_or(1, char::len_utf8);
                (rest.get(1 + len) == Some(&b'\'')).then_some(i + 2 + len)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether the word `w` starts at `i` (not inside a longer identifier).
fn word_at(code: &[u8], i: usize, w: &[u8]) -> bool {
    code[i..].starts_with(w)
        && (i == 0 || !is_ident(code[i - 1]))
        && code.get(i + w.len()).is_none_or(|&c| !is_ident(c))
}

/// For each position, how many inline modules (`mod name { … }`) enclose it.
fn inline_depths(code: &[u8]) -> Vec<u8> {
    let mut depths = vec![0u8; code.len()];
    let mut braces = 0usize;
    let mut open: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if word_at(code, i, b"mod") {
            let mut j = i + 3;
            while j < code.len() && (code[j].is_ascii_whitespace() || is_ident(code[j])) {
                j += 1;
            }
            if code.get(j) == Some(&b'{') {
                braces += 1;
                open.push(braces);
                for d in &mut depths[i..=j] {
                    *d = open.len() as u8;
                }
                i = j + 1;
                continue;
            }
        }
        match code[i] {
            b'{' => braces += 1,
            b'}' => {
                if open.last() == Some(&braces) {
                    open.pop();
                }
                braces = braces.saturating_sub(1);
            }
            _ => {}
        }
        depths[i] = open.len() as u8;
        i += 1;
    }
    depths
}

/// The paths a `use` tree names, `{…}` groups expanded (`a::{b, c::d}` is `a::b`, `a::c::d`).
fn expand_use(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        return vec![
            path.split("::")
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
        ];
    };
    let prefix: Vec<String> = tree[..open]
        .split("::")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (k, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|i| !i.trim().is_empty())
        .flat_map(expand_use)
        .map(|tail| prefix.iter().cloned().chain(tail).collect())
        .collect()
}

/// Where a file's unit tests are (`mod tests { … }`): what they use is no edge of the module
/// graph (a test of `parquet` may write its files with the dataset's properties).
fn test_modules(code: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for i in 0..code.len() {
        if !(word_at(code, i, b"mod") && code[i + 3..].starts_with(b" tests")) {
            continue;
        }
        let Some(open) = code[i..].iter().position(|&c| c == b'{').map(|p| i + p) else {
            continue;
        };
        let mut depth = 0usize;
        for (j, &c) in code.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push((i, j));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Whether a module is a file of tests (`tests.rs`, `…_tests.rs`, or under a `tests` folder):
/// like an inline `mod tests`, what it uses is no edge (a test of `sql` may write its archive
/// with the importer).
fn is_test_file(module: &Module) -> bool {
    module
        .iter()
        .any(|part| part == "tests" || part.ends_with("_tests"))
}

/// The `crate::`/`super::` paths of a file outside its unit tests, each with how many inline
/// modules enclose it.
fn named_paths(code: &[u8]) -> Vec<(Vec<String>, u8)> {
    let tests = test_modules(code);
    let in_tests = |at: usize| tests.iter().any(|&(a, b)| a <= at && at <= b);
    let depths = inline_depths(code);
    let text = String::from_utf8_lossy(code);
    let mut out = Vec::new();
    let mut in_use: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if word_at(code, i, b"use") {
            let end = text[i..].find(';').map_or(code.len(), |p| i + p);
            let tree = text[i + 3..end].trim();
            if (tree.starts_with("crate") || tree.starts_with("super")) && !in_tests(i) {
                for path in expand_use(tree) {
                    out.push((path, depths[i]));
                }
            }
            in_use.push((i, end));
            i = end;
        } else {
            i += 1;
        }
    }
    for start in 0..code.len() {
        let starts_path = word_at(code, start, b"crate") || word_at(code, start, b"super");
        if !starts_path
            || !code[start + 5..].starts_with(b"::")
            || in_use.iter().any(|&(a, b)| a <= start && start < b)
            || in_tests(start)
        {
            continue;
        }
        let mut end = start;
        while end < code.len() && (is_ident(code[end]) || code[end] == b':') {
            end += 1;
        }
        let path = text[start..end]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        out.push((path, depths[start]));
    }
    out
}

/// The file graph of the crate whose sources are in `src`.
fn graph(src: &Path) -> BTreeMap<Module, BTreeMap<Module, String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges = BTreeMap::new();
    for file in &files {
        let me = module_of(src, file);
        if is_test_file(&me) {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(file).unwrap());
        let mut out = BTreeMap::new();
        for (path, mut inline) in named_paths(&code) {
            let mut path = path.as_slice();
            let mut target = if path.first().is_some_and(|p| p == "crate") {
                path = &path[1..];
                Vec::new()
            } else {
                me.clone()
            };
            while path.first().is_some_and(|p| p == "super") {
                if inline > 0 {
                    inline -= 1;
                } else {
                    target.pop();
                }
                path = &path[1..];
            }
            target.extend(path.iter().cloned());
            // The longest prefix that is a file: `crate::query::plan::Plan` is `query::plan`.
            while !target.is_empty() && !modules.contains(&target) {
                target.pop();
            }
            if !target.is_empty() && target != me {
                out.entry(target).or_insert_with(|| path.join("::"));
            }
        }
        edges.insert(me, out);
    }
    edges
}

/// The cycles of `graph`: its strongly connected components of more than one file.
fn cycles(graph: &BTreeMap<Module, BTreeMap<Module, String>>) -> Vec<Vec<Module>> {
    // Kosaraju: an order by finishing time, then the reversed graph in that order.
    fn visit<'a>(
        node: &'a Module,
        next: &dyn Fn(&'a Module) -> Vec<&'a Module>,
        seen: &mut BTreeSet<&'a Module>,
        out: &mut Vec<&'a Module>,
    ) {
        let mut stack = vec![(node, false)];
        while let Some((n, done)) = stack.pop() {
            if done {
                out.push(n);
                continue;
            }
            if !seen.insert(n) {
                continue;
            }
            stack.push((n, true));
            for m in next(n) {
                if !seen.contains(m) {
                    stack.push((m, false));
                }
            }
        }
    }
    let forward = |n: &Module| -> Vec<&Module> {
        graph
            .get_key_value(n)
            .map(|(_, e)| e.keys().collect())
            .unwrap_or_default()
    };
    let mut reverse: BTreeMap<&Module, Vec<&Module>> = BTreeMap::new();
    for (a, es) in graph {
        for b in es.keys() {
            reverse.entry(b).or_default().push(a);
        }
    }
    let backward = |n: &Module| -> Vec<&Module> { reverse.get(n).cloned().unwrap_or_default() };
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for n in graph.keys() {
        visit(n, &forward, &mut seen, &mut order);
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for n in order.into_iter().rev() {
        if seen.contains(n) {
            continue;
        }
        let mut component = Vec::new();
        visit(n, &backward, &mut seen, &mut component);
        if component.len() > 1 {
            out.push(component.into_iter().cloned().collect());
        }
    }
    out
}

fn describe(graph: &BTreeMap<Module, BTreeMap<Module, String>>, cycle: &[Module]) -> String {
    let name = |m: &Module| m.join("::");
    let mut lines = Vec::new();
    for a in cycle {
        for (b, why) in &graph[a] {
            if cycle.contains(b) {
                lines.push(format!("  {} -> {} ({why})", name(a), name(b)));
            }
        }
    }
    lines.join("\n")
}

/// The graph of each folder's children: a file's edge to another, seen from the folder that
/// holds both, is one between the children of that folder they are in (`api::values ->
/// versions` is `api -> versions` at the crate's top). A cycle there is a cycle of folders
/// even where their files form none.
fn folder_graphs(
    files: &BTreeMap<Module, BTreeMap<Module, String>>,
) -> BTreeMap<Module, BTreeMap<Module, BTreeMap<Module, String>>> {
    let mut folders: BTreeMap<Module, BTreeMap<Module, BTreeMap<Module, String>>> = BTreeMap::new();
    for (a, edges) in files {
        for (b, why) in edges {
            let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            if common >= a.len() || common >= b.len() {
                continue;
            }
            let folder: Module = a[..common].to_vec();
            let child = |m: &Module| m[..=common].to_vec();
            let graph = folders.entry(folder).or_default();
            graph.entry(child(b)).or_default();
            graph
                .entry(child(a))
                .or_default()
                .entry(child(b))
                .or_insert_with(|| format!("{}: {why}", a.join("::")));
        }
    }
    folders
}

#[test]
fn no_crate_has_an_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in ["engine/src", "server/src", "src"] {
        let graph = graph(&root.join(src));
        assert!(graph.len() > 1 || src == "src", "no sources found in {src}");
        let found = cycles(&graph);
        let text: Vec<String> = found.iter().map(|c| describe(&graph, c)).collect();
        assert!(
            found.is_empty(),
            "import cycles in {src}:\n{}",
            text.join("\n\n")
        );
        for (folder, children) in folder_graphs(&graph) {
            let found = cycles(&children);
            let text: Vec<String> = found.iter().map(|c| describe(&children, c)).collect();
            assert!(
                found.is_empty(),
                "import cycles between the folders of {src}/{}:\n{}",
                folder.join("/"),
                text.join("\n\n")
            );
        }
    }
}

/// The order a folder's doc gives its modules in (`- [`name`]` or `- `name`` items of a list introduced
/// by "each uses only those above it"), from the folder's `lib.rs` or `mod.rs`; empty where it
/// gives none.
fn documented_order(folder_doc: &str) -> Vec<String> {
    let Some(start) = folder_doc.find("each uses only those above it") else {
        return Vec::new();
    };
    folder_doc[start..]
        .lines()
        .skip(1)
        .skip_while(|l| l.trim() == "//!")
        .take_while(|l| l.starts_with("//!"))
        .filter_map(|l| {
            let item = l.trim_start_matches("//!").trim();
            item.strip_prefix("- [`")
                .or_else(|| item.strip_prefix("- `"))
        })
        .filter_map(|item| item.split('`').next())
        .map(str::to_owned)
        .collect()
}

/// Where a folder's doc lists its modules in order, each of them uses only those listed above
/// it, and every child of the folder is listed.
fn layering_faults(
    src: &Path,
    folders: &BTreeMap<Module, BTreeMap<Module, BTreeMap<Module, String>>>,
) -> Vec<String> {
    let mut faults = Vec::new();
    for (folder, children) in folders {
        let dir = folder
            .iter()
            .fold(src.to_path_buf(), |d, part| d.join(part));
        let doc = ["lib.rs", "main.rs", "mod.rs"]
            .iter()
            .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
            .unwrap_or_default();
        let order = documented_order(&doc);
        if order.is_empty() {
            continue;
        }
        let place = |m: &Module| order.iter().position(|o| *o == m[folder.len()]);
        for (a, edges) in children {
            let Some(pa) = place(a) else {
                faults.push(format!(
                    "{}: not in its folder's documented order",
                    a.join("::")
                ));
                continue;
            };
            for (b, why) in edges {
                if place(b).is_some_and(|pb| pb > pa) {
                    faults.push(format!(
                        "{} uses {}, listed below it ({why})",
                        a.join("::"),
                        b.join("::")
                    ));
                }
            }
        }
    }
    faults
}

#[test]
fn every_folder_keeps_its_documented_layer_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (src, top) in [
        ("engine/src", "lib.rs"),
        ("server/src", "lib.rs"),
        ("src", "main.rs"),
    ] {
        let doc = std::fs::read_to_string(root.join(src).join(top)).unwrap();
        assert!(
            documented_order(&doc).len() > 2,
            "{src}/{top} lists its modules in order"
        );
        let faults = layering_faults(&root.join(src), &folder_graphs(&graph(&root.join(src))));
        assert!(faults.is_empty(), "{src}:\n{}", faults.join("\n"));
    }
}

/// The checker itself finds a cycle through `use`, inline paths and `super`, and none through
/// `super` inside a test module or through text in comments and strings.
#[test]
fn the_checker_sees_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |name: &str, text: &str| {
        let path = src.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\n");
    write(
        "a/mod.rs",
        "pub mod inner;\nuse crate::b::{B, other::{C}};\n",
    );
    write(
        "a/inner.rs",
        "// use crate::b::B;\nconst S: &str = \"crate::b::B\";\nmod tests { use crate::b::B; }\n",
    );
    write("b.rs", "fn f() -> crate::a::A { todo!() }\n");
    let g = graph(src);
    let found = cycles(&g);
    assert_eq!(found.len(), 1, "{found:?}");
    let mut cycle = found[0].clone();
    cycle.sort();
    assert_eq!(cycle, vec![vec!["a".to_owned()], vec!["b".to_owned()]]);
    assert!(g[&vec!["a".to_owned(), "inner".to_owned()]].is_empty());

    write("b.rs", "fn f() {}\n");
    write("a/inner.rs", "use super::Thing;\n");
    write("c.rs", "fn g() { super::a::inner::x(); }\n");
    let g = graph(src);
    assert!(cycles(&g).is_empty());
    write("a/mod.rs", "pub mod inner;\nfn h() { crate::c::g(); }\n");
    assert_eq!(cycles(&graph(src)).len(), 1);

    // Folders: `d/x` uses `e`, and `e` uses `d/y`; no two files form a cycle, the folders do.
    write("a/mod.rs", "pub mod inner;\n");
    write("d/mod.rs", "pub mod x;\npub mod y;\n");
    write("d/x.rs", "use crate::e::E;\n");
    write("d/y.rs", "pub struct Y;\n");
    write("e.rs", "use crate::d::y::Y;\n");
    let g = graph(src);
    assert!(cycles(&g).is_empty());
    let folders = folder_graphs(&g);
    let top = cycles(&folders[&Vec::new()]);
    assert_eq!(top.len(), 1, "{top:?}");

    // Layering: the crate's doc lists `d` above `e`, so `e -> d` is allowed and `d -> e` not.
    write(
        "lib.rs",
        "//! Modules; each uses only those above it:\n//!\n//! - [`d`]: below.\n//! - [`e`]: above.\n\npub mod d;\npub mod e;\n",
    );
    write("c.rs", "fn g() {}\n");
    write("d/x.rs", "pub struct X;\n");
    assert!(layering_faults(src, &folder_graphs(&graph(src))).is_empty());
    write("d/x.rs", "use crate::e::E;\n");
    let faults = layering_faults(src, &folder_graphs(&graph(src)));
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert!(
        faults[0].starts_with("d uses e, listed below it"),
        "{faults:?}"
    );
}

//! `spidx devices`: lists the device presets, or prints one preset's full parameters in
//! the device-file format so users can copy and edit it.

use anyhow::{bail, Result};
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use serde_json::json;
use spidx::device::preset::{self, Preset};
use spidx::device::sources;

/// Arguments of `spidx devices`.
#[derive(Args)]
pub struct DevicesArgs {
    /// Show this preset's parameters (as a device file you can edit).
    name: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Every column (also each preset's source), unwrapped; by default the table fits
    /// [`TABLE_WIDTH`] columns.
    #[arg(long)]
    wide: bool,
}

/// Width the preset table fits unless `--wide` is given.
pub const TABLE_WIDTH: u16 = 100;

pub fn run(args: DevicesArgs) -> Result<()> {
    match args.name {
        Some(name) => show(&name, args.json),
        None => list(args.json, args.wide),
    }
}

fn list(as_json: bool, wide: bool) -> Result<()> {
    let presets = preset::presets();
    if as_json {
        let items: Vec<_> = presets.iter().map(preset_json).collect();
        println!("{}", serde_json::to_string_pretty(&items)?);
        return Ok(());
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    if wide {
        table
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(["preset", "kind", "models", "source"]);
        for p in &presets {
            table.add_row([p.name, p.config.kind(), p.summary, p.source]);
        }
    } else {
        table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(TABLE_WIDTH)
            .set_header(["preset", "kind", "models"]);
        for p in &presets {
            table.add_row([p.name, p.config.kind(), p.summary]);
        }
    }
    println!("{table}");
    if !wide {
        println!("Where each preset's figures come from: `spidx devices --wide`.");
    }
    println!("Show one preset's parameters with `spidx devices NAME`; override any of them with");
    println!("`--device-param key=value`, or describe your own device in a TOML file (see docs/devices.md).");
    Ok(())
}

fn show(name: &str, as_json: bool) -> Result<()> {
    let Some(p) = preset::find(name) else {
        bail!(
            "unknown preset '{name}'; presets: {}",
            preset::names().join(", ")
        );
    };
    if as_json {
        println!("{}", serde_json::to_string_pretty(&preset_json(&p))?);
    } else {
        println!("# {}: {}", p.name, p.summary);
        println!("# source: {}", p.source);
        println!("name = \"{}\"", p.name);
        print!("{}", with_sources(p.name, &toml::to_string(&p.config)?));
    }
    Ok(())
}

/// The device file's lines, each parameter followed by its source as a comment (see
/// `spidx::device::sources`).
fn with_sources(name: &str, text: &str) -> String {
    let sources = sources::of(name).unwrap_or_default();
    let mut table = String::new();
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(h) = t.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            table = h.to_string();
        }
        out.push_str(line);
        if let Some((k, _)) = t.split_once(" = ").filter(|_| !t.starts_with('[')) {
            let key = if table.is_empty() {
                k.to_string()
            } else {
                format!("{table}.{k}")
            };
            if let Some((_, s)) = sources.iter().find(|(p, _)| *p == key) {
                out.push_str(&format!("  # {s}"));
            }
        }
        out.push('\n');
    }
    out
}

fn preset_json(p: &Preset) -> serde_json::Value {
    let params: serde_json::Map<String, serde_json::Value> = sources::of(p.name)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, s)| (k, json!(s)))
        .collect();
    json!({ "name": p.name, "kind": p.config.kind(), "summary": p.summary, "source": p.source, "config": p.config, "parameter_sources": params })
}

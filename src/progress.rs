//! Progress on a terminal: bars on standard error while a long command runs, nothing when
//! standard error is not a terminal.

use std::io::IsTerminal;

/// A progress bar on standard error (when it is a terminal) of `what`, counted in `units`.
pub fn progress_bar(what: &'static str, units: &str) -> impl Fn(u64, u64) {
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "{{msg}} [{{bar:40}}] {{pos}}/{{len}} {units}, {{elapsed}} (eta {{eta}})"
            ))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b.set_message(what);
        b
    });
    move |done, total| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
            if done == total {
                b.finish();
            }
        }
    }
}

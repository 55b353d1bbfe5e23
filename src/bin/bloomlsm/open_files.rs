//! `--max-open-files`: the file descriptors each store a command opens may
//! hold (`Options::max_open_files`), for `bench` and the `db` commands.

use bloomlsm::Options;
use clap::Args;

/// The `--max-open-files` flag.
#[derive(Clone, Debug, Default, Args)]
pub struct OpenFilesArg {
    /// File descriptors each store may hold open. Past what its other files
    /// need, table files not read lately are closed and reopened when a read
    /// needs them: for stores of more tables than the process may open. The
    /// default stays below the soft open-file limit (`ulimit -n`): half of
    /// it, or under a small limit all but 24 descriptors up to 1000 (1000
    /// under 1024, 40 under 64).
    #[arg(long, global = true, value_name = "N", value_parser = parse_max_open_files)]
    pub max_open_files: Option<usize>,
}

impl OpenFilesArg {
    /// Sets `opts.max_open_files` if the flag was given.
    pub fn apply(&self, opts: &mut Options) {
        if let Some(n) = self.max_open_files {
            opts.max_open_files = n;
        }
    }
}

/// Parses `--max-open-files`: a count at least the library's minimum for
/// the options the commands open stores with.
fn parse_max_open_files(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a count of files"))?;
    let min = Options::default().min_max_open_files();
    if n < min {
        return Err(format!(
            "{n} is too few: a store needs at least {min} (its own files and {} tables)",
            bloomlsm::options::MIN_TABLE_FILES
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_below_the_minimum_are_refused() {
        let min = Options::default().min_max_open_files();
        assert_eq!(parse_max_open_files(&min.to_string()), Ok(min));
        assert_eq!(parse_max_open_files("100000"), Ok(100_000));
        let e = parse_max_open_files(&(min - 1).to_string()).unwrap_err();
        assert!(e.contains(&format!("at least {min}")), "{e}");
        assert!(parse_max_open_files("many").is_err());
        assert!(parse_max_open_files("-1").is_err());
    }
}

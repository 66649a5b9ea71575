//! Markdown written by the reports (`audit -o md`, `check-upgrade -o md`): what they share.

/// `text` as one table cell: a `|` escaped so it does not end the cell, line breaks as spaces
/// so the row stays one line.
pub fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cell_stays_one_cell_on_one_line() {
        assert_eq!(super::cell("a|b\nc"), "a\\|b c");
    }
}

//! Memories longer than a model's window are embedded in chunks: split at
//! headings and paragraphs, packed up to a budget of words, each chunk
//! led by the memory's title so that it keeps its subject.

/// Words a chunk holds at most: about 200 word pieces, inside a window of
/// 256 with the title.
pub(crate) const CHUNK_WORDS: usize = 150;

/// The texts to embed for a memory titled `title` with `body`: one when
/// it fits, else one per chunk.
pub fn chunks(title: &str, body: &str) -> Vec<String> {
    let title = title.trim();
    let lead = |text: &str| {
        if title.is_empty() || text.trim_start().starts_with(title) {
            text.trim().to_owned()
        } else {
            format!("{title}\n{}", text.trim())
        }
    };
    let words = body.split_whitespace().count();
    if words <= CHUNK_WORDS {
        return vec![lead(body)];
    }
    let mut out = Vec::new();
    let mut current = String::new();
    let mut current_words = 0;
    let mut flush = |current: &mut String, current_words: &mut usize| {
        if !current.trim().is_empty() {
            out.push(lead(current));
        }
        current.clear();
        *current_words = 0;
    };
    for block in blocks(body) {
        let block_words: Vec<&str> = block.split_whitespace().collect();
        let heading = block.trim_start().starts_with('#');
        if heading || current_words + block_words.len() > CHUNK_WORDS {
            flush(&mut current, &mut current_words);
        }
        if block_words.len() > CHUNK_WORDS {
            for piece in block_words.chunks(CHUNK_WORDS) {
                current.push_str(&piece.join(" "));
                current_words = piece.len();
                flush(&mut current, &mut current_words);
            }
            continue;
        }
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(block.trim());
        current_words += block_words.len();
    }
    flush(&mut current, &mut current_words);
    out
}

/// The body's paragraphs (blank-line separated) and heading lines.
fn blocks(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in body.lines() {
        let heading = line.trim_start().starts_with('#');
        if line.trim().is_empty() || heading {
            if !current.trim().is_empty() {
                out.push(std::mem::take(&mut current));
            }
            current.clear();
            if heading {
                current.push_str(line);
                current.push('\n');
            }
            continue;
        }
        current.push_str(line);
        current.push('\n');
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_memory_is_one_text_led_by_its_title() {
        assert_eq!(
            chunks("Coffee", "Prefers coffee over tea."),
            ["Coffee\nPrefers coffee over tea."]
        );
        assert_eq!(chunks("", "just words"), ["just words"]);
    }

    #[test]
    fn a_long_memory_is_cut_at_headings_and_paragraphs_each_chunk_with_the_title() {
        let para = |w: &str| vec![w; 100].join(" ");
        let body = format!(
            "# One\n{}\n\n{}\n\n# Two\n{}\n",
            para("a"),
            para("b"),
            para("c")
        );
        let got = chunks("Trip", &body);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got.iter().all(|c| c.starts_with("Trip\n")));
        assert!(got[0].contains("# One") && got[0].contains("a a"));
        assert!(got[1].contains("b b") && !got[1].contains("a a"));
        assert!(got[2].contains("# Two") && got[2].contains("c c"));
        // A paragraph longer than a chunk is cut by words.
        let huge = vec!["w"; 400].join(" ");
        let got = chunks("T", &huge);
        assert_eq!(got.len(), 3);
        assert!(
            got.iter()
                .all(|c| c.split_whitespace().count() <= CHUNK_WORDS + 1)
        );
    }
}

//! Meaning: sentence embeddings computed on the CPU, so that a question
//! finds a memory that says the same thing in other words.
//!
//! A model is a folder in the sentence-transformers layout:
//! - `config.json`: a BERT-family encoder;
//! - `model.safetensors`: its weights;
//! - `tokenizer.json`: its word pieces;
//! - optionally `1_Pooling/config.json` (mean, CLS or max pooling; mean
//!   when absent), `modules.json` (a `Normalize` module makes vectors unit
//!   length), `sentence_bert_config.json` (`max_seq_length`) and
//!   `config_sentence_transformers.json` (`prompts.query`, a prefix put
//!   before queries, as bge models ask).
//!
//! The encoder runs with candle, in pure Rust: nothing is downloaded at
//! build or query time (`mnemofs model pull` downloads a model beforehand,
//! see `hub.rs`). Vectors are always made unit length here, so a dot
//! product is their cosine.
//!
//! Two encoders share the weights: candle's, in 32-bit floats and in
//! batches, for memories; and `question.rs`, one text at a time, for
//! questions, with matrix products of its own chosen at run time: in
//! floats (`float.rs`, AVX2 with FMA; its vectors are candle's to about a
//! millionth, in under half the time), or, when chosen, with 8-bit weights
//! on the integer dot products of the CPU (`int8.rs`), faster again, whose
//! vectors are within a cosine of 0.995 of the float ones'
//! ([`Embedder::set_kernel`]). A CPU without AVX2 embeds questions with
//! candle.

mod bert;
mod chunk;
mod float;
pub mod hub;
mod int8;
mod question;

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

pub use chunk::chunks;
pub use int8::Kernel;

/// Why a model cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A file the model needs is missing or unreadable.
    #[error("the model in {dir} has no readable {file}: {why}")]
    Missing {
        /// The model's folder.
        dir: PathBuf,
        /// The file.
        file: &'static str,
        /// What went wrong.
        why: String,
    },
    /// The model is not one this encoder runs.
    #[error("the model in {dir} cannot be used: {why}")]
    Unsupported {
        /// The model's folder.
        dir: PathBuf,
        /// Why.
        why: String,
    },
    /// The config names a model on the hub that is not in the cache.
    #[error("the model {name} is not downloaded; run `mnemofs model pull {name}`")]
    NotPulled {
        /// The model's name on the hub.
        name: String,
    },
    /// Running the model failed.
    #[error("embedding failed: {0}")]
    Run(String),
}

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pooling {
    Mean,
    Cls,
    Max,
}

#[derive(Debug, Default, Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
}

#[derive(Debug, Default, Deserialize)]
struct SentenceConfig {
    max_seq_length: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
struct Prompts {
    #[serde(default)]
    prompts: std::collections::HashMap<String, String>,
}

/// How a question is embedded (the config's `search.questions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Questions {
    /// In floats, as the memories are.
    #[default]
    Exact,
    /// With 8-bit weights, when the CPU has AVX2 (else in floats): about
    /// 1.5 times faster, LoCoMo recall@5 within 0.005.
    Fast,
}

/// A loaded sentence-embedding model.
pub struct Embedder {
    bert: bert::Bert,
    /// The questions' encoder, unless this CPU has no kernel for it (then
    /// questions go through candle's, as memories do). It starts in
    /// floats, its weights packed for its kernels at load (42 MB and about
    /// a fifth of the load for all-MiniLM-L6-v2); quantizing them instead,
    /// when 8 bits are chosen, takes about as long as the load.
    question: Option<question::QuestionEncoder>,
    tokenizer: tokenizers::Tokenizer,
    pooling: Pooling,
    dims: usize,
    query_prefix: String,
    name: String,
    /// Whether it tells Chinese sentences apart (see
    /// [`reads_chinese`](Self::reads_chinese)), once asked.
    reads_chinese: std::sync::OnceLock<bool>,
}

/// Chinese sentences about unrelated things: a model that reads Chinese
/// puts them far apart.
const UNRELATED_CHINESE: [&str; 6] = [
    "今天天气很好，适合去公园散步。",
    "数据库迁移方案需要在周五前评审。",
    "我的猫叫团子，是一只橘猫。",
    "下个月去北京出差三天。",
    "他每天早上六点起床跑步。",
    "这家餐厅的红烧肉特别好吃。",
];

/// Above this mean cosine between [`UNRELATED_CHINESE`], a model does not
/// read Chinese. all-MiniLM-L6-v2 (English) puts them at 0.6 on average
/// (0.45 to 0.84), as close as an English memory is to the question it
/// answers; a model that reads Chinese puts unrelated sentences near 0.1.
const UNREAD_LIKENESS: f32 = 0.4;

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("name", &self.name)
            .field("dims", &self.dims)
            .field("pooling", &self.pooling)
            .field("kernel", &self.kernel())
            .finish_non_exhaustive()
    }
}

fn read_json<T: serde::de::DeserializeOwned>(
    dir: &Path,
    file: &'static str,
) -> Result<Option<T>, EmbedError> {
    let path = dir.join(file);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(EmbedError::Missing {
                dir: dir.to_path_buf(),
                file,
                why: e.to_string(),
            });
        }
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| EmbedError::Missing {
            dir: dir.to_path_buf(),
            file,
            why: e.to_string(),
        })
}

impl Embedder {
    /// Loads the model in `dir` (see the module's comment).
    pub fn load(dir: &Path) -> Result<Embedder, EmbedError> {
        let missing = |file: &'static str, why: String| EmbedError::Missing {
            dir: dir.to_path_buf(),
            file,
            why,
        };
        let config: bert::Config = read_json(dir, "config.json")?
            .ok_or_else(|| missing("config.json", "no such file".into()))?;
        if let Some(why) = config.unsupported() {
            return Err(EmbedError::Unsupported {
                dir: dir.to_path_buf(),
                why,
            });
        }
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            return Err(missing("model.safetensors", "no such file".into()));
        }
        // SAFETY: the weights file is mapped read-only and only read; a
        // model folder is not rewritten while in use.
        let vb =
            unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &Device::Cpu) }
                .map_err(|e| missing("model.safetensors", e.to_string()))?;
        let bert = bert::Bert::load(vb, &config).map_err(|e| EmbedError::Unsupported {
            dir: dir.to_path_buf(),
            why: e.to_string(),
        })?;
        let mut tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| missing("tokenizer.json", e.to_string()))?;
        let max_tokens = read_json::<SentenceConfig>(dir, "sentence_bert_config.json")?
            .and_then(|c| c.max_seq_length)
            .unwrap_or(config.max_position_embeddings)
            .min(config.max_position_embeddings);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| missing("tokenizer.json", e.to_string()))?;
        tokenizer.with_padding(Some(tokenizers::PaddingParams::default()));
        let pooling = match read_json::<PoolingConfig>(dir, "1_Pooling/config.json")? {
            Some(p) if p.pooling_mode_cls_token => Pooling::Cls,
            Some(p) if p.pooling_mode_max_tokens => Pooling::Max,
            _ => Pooling::Mean,
        };
        let query_prefix = read_json::<Prompts>(dir, "config_sentence_transformers.json")?
            .and_then(|p| p.prompts.get("query").cloned())
            .unwrap_or_default();
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string());
        let question = float::available()
            .then(|| {
                question::QuestionEncoder::new(&bert, question::Arithmetic::Floats)
                    .inspect_err(|e| tracing::warn!("questions go through candle: {e}"))
                    .ok()
            })
            .flatten();
        Ok(Embedder {
            bert,
            question,
            tokenizer,
            pooling,
            dims: config.hidden_size(),
            query_prefix,
            name,
            reads_chinese: std::sync::OnceLock::new(),
        })
    }

    /// Whether the model tells Chinese sentences apart: asked of the
    /// model once, by how close it puts sentences about unrelated things
    /// ([`UNRELATED_CHINESE`]). An English model does not: to it every
    /// Chinese text is much like every other, so a Chinese question would
    /// find the whole store by meaning, and a Chinese memory would be
    /// found by any question. So with such a model Chinese is searched by
    /// its words alone. A model that cannot embed them reads nothing.
    pub fn reads_chinese(&self) -> bool {
        *self.reads_chinese.get_or_init(|| {
            let Ok(vectors) = self.embed(&UNRELATED_CHINESE) else {
                return false;
            };
            let mut sum = 0.0;
            let mut pairs = 0;
            for (i, a) in vectors.iter().enumerate() {
                for b in &vectors[i + 1..] {
                    sum += cosine(a, b);
                    pairs += 1;
                }
            }
            let likeness = sum / pairs.max(1) as f32;
            tracing::debug!(
                "{}: unrelated Chinese sentences {likeness:.2} alike",
                self.name
            );
            likeness < UNREAD_LIKENESS
        })
    }

    /// Loads the model the config names: its folder, and its name when it
    /// is a model from the hub, which must have been pulled into `dir`.
    pub fn load_configured(
        dir: &Path,
        hub_name: Option<&hub::ModelName>,
    ) -> Result<Embedder, EmbedError> {
        match hub_name {
            Some(name) if !hub::is_pulled(dir) => Err(EmbedError::NotPulled {
                name: name.to_string(),
            }),
            _ => Embedder::load(dir),
        }
    }

    /// The length of a vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The model's name (its folder's).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One unit-length vector per text, in order. A text longer than the
    /// model's window is cut to it (see [`chunks`] to embed it whole).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let run = |e: String| EmbedError::Run(e);
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| run(e.to_string()))?;
        let rows = |f: fn(&tokenizers::Encoding) -> &[u32]| -> Vec<Vec<u32>> {
            encodings.iter().map(|e| f(e).to_vec()).collect()
        };
        let device = Device::Cpu;
        let ids = Tensor::new(rows(tokenizers::Encoding::get_ids), &device)
            .map_err(|e| run(e.to_string()))?;
        let mask = Tensor::new(rows(tokenizers::Encoding::get_attention_mask), &device)
            .map_err(|e| run(e.to_string()))?;
        self.pool(&ids, &mask).map_err(|e| run(e.to_string()))
    }

    /// The vector of a query: with the model's query prefix, if it has one,
    /// and from the questions' encoder (see the module's comment).
    pub fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let run = |e: String| EmbedError::Run(e);
        let text = format!("{}{query}", self.query_prefix);
        let question = match &self.question {
            Some(q) => q,
            None => {
                let mut vectors = self.embed(&[&text])?;
                return vectors.pop().ok_or_else(|| run("no vector".into()));
            }
        };
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| run(e.to_string()))?;
        let ids: Vec<u32> = encoding
            .get_ids()
            .iter()
            .zip(encoding.get_attention_mask())
            .filter(|&(_, &mask)| mask == 1)
            .map(|(&id, _)| id)
            .collect();
        if ids.is_empty() {
            return Err(run("no tokens".into()));
        }
        let states = question.forward(&ids).map_err(|e| run(e.to_string()))?;
        Ok(self.pool_rows(&states))
    }

    /// Whether the model's vocabulary holds `word` whole (as written, or
    /// in lowercase): a word it learned, not a misspelling of one.
    pub fn knows_word(&self, word: &str) -> bool {
        self.tokenizer.token_to_id(word).is_some()
            || self.tokenizer.token_to_id(&word.to_lowercase()).is_some()
    }

    /// The 8-bit kernel questions are embedded with, or `None` when they
    /// are embedded in floats (the default).
    pub fn kernel(&self) -> Option<Kernel> {
        match self
            .question
            .as_ref()
            .map(question::QuestionEncoder::arithmetic)
        {
            Some(question::Arithmetic::Int8(kernel)) => Some(kernel),
            _ => None,
        }
    }

    /// Embeds questions as `questions` says from now on: `Fast` takes the
    /// fastest 8-bit kernel this CPU has, unless that is the portable one
    /// (slower than floats). Said in the log either way.
    pub fn use_questions(&mut self, questions: Questions) {
        if questions != Questions::Fast {
            return;
        }
        let best = Kernel::best();
        if best != Kernel::Portable && self.set_kernel(Some(best)) {
            tracing::info!("questions are embedded in 8 bits ({best:?})");
        } else {
            tracing::warn!(
                "search.questions is fast, but this CPU has no AVX2: questions stay in floats"
            );
        }
    }

    /// Embeds questions with the 8-bit `kernel` from now on, or in floats
    /// (`None`), to compare them. Says whether this CPU runs the kernel;
    /// if not, nothing changes.
    pub fn set_kernel(&mut self, kernel: Option<Kernel>) -> bool {
        let arithmetic = match kernel {
            None if float::available() => question::Arithmetic::Floats,
            None => {
                self.question = None;
                return true;
            }
            Some(kernel) if !kernel.is_available() => return false,
            Some(kernel) => {
                if let Some(q) = &mut self.question
                    && q.set_kernel(kernel)
                {
                    return true;
                }
                question::Arithmetic::Int8(kernel)
            }
        };
        if self
            .question
            .as_ref()
            .map(question::QuestionEncoder::arithmetic)
            == Some(arithmetic)
        {
            return true;
        }
        match question::QuestionEncoder::new(&self.bert, arithmetic) {
            Ok(q) => self.question = Some(q),
            Err(e) => {
                tracing::warn!("cannot make the questions' encoder: {e}");
                return false;
            }
        }
        true
    }

    /// One unit-length vector from the hidden states of one text's tokens,
    /// as [`pool`](Self::pool) makes it.
    fn pool_rows(&self, states: &[f32]) -> Vec<f32> {
        let mut rows = states.chunks_exact(self.dims);
        let mut pooled = rows.next().map(<[f32]>::to_vec).unwrap_or_default();
        match self.pooling {
            Pooling::Cls => {}
            Pooling::Mean => {
                let mut count = 1.0;
                for row in rows {
                    for (p, v) in pooled.iter_mut().zip(row) {
                        *p += v;
                    }
                    count += 1.0;
                }
                for p in &mut pooled {
                    *p /= count;
                }
            }
            Pooling::Max => {
                for row in rows {
                    for (p, v) in pooled.iter_mut().zip(row) {
                        *p = p.max(*v);
                    }
                }
            }
        }
        let norm = cosine(&pooled, &pooled).sqrt().max(1e-12);
        for p in &mut pooled {
            *p /= norm;
        }
        pooled
    }

    fn pool(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Vec<Vec<f32>>> {
        let states = self.bert.forward(ids, mask)?;
        let pooled = match self.pooling {
            Pooling::Cls => states.narrow(1, 0, 1)?.squeeze(1)?,
            Pooling::Mean => {
                let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let sum = states.broadcast_mul(&m)?.sum(1)?;
                sum.broadcast_div(&m.sum(1)?.clamp(1e-9, f64::MAX)?)?
            }
            Pooling::Max => {
                let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                // Padding can never be the largest value.
                let masked = states.broadcast_add(&((m - 1.0)? * 1e9)?)?;
                masked.max(1)?
            }
        };
        let norm = pooled
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12, f64::MAX)?;
        pooled.broadcast_div(&norm)?.to_vec2()
    }
}

/// The dot product of two vectors: their cosine, as both are unit length.
///
/// Summed in 16 lanes: one running sum would be a chain of dependent
/// additions the compiler may not reorder, four to eight times slower, and
/// a search at 100,000 memories is this loop.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    dot(a, b)
}

/// The dot product, summed in 16 lanes (see [`cosine`]); always inlined,
/// so that a caller compiled for AVX2 and FMA runs it with them.
#[inline(always)]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let (a_lanes, a_rest) = a.as_chunks::<LANES>();
    let (b_lanes, b_rest) = b.as_chunks::<LANES>();
    let mut sums = [0f32; LANES];
    for (x, y) in a_lanes.iter().zip(b_lanes) {
        for i in 0..LANES {
            sums[i] += x[i] * y[i];
        }
    }
    let rest: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    sums.iter().sum::<f32>() + rest
}

/// A small pseudo-random stream in [-1, 1), for the kernels' tests.
#[cfg(test)]
fn noise(seed: u64, n: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

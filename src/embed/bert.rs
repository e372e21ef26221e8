//! A BERT encoder (the architecture of all-MiniLM-L6-v2, bge and most
//! sentence-transformers models), on candle's CPU tensors: embeddings,
//! then self-attention layers, read from a safetensors file by the names
//! Hugging Face gives them.

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

/// What `config.json` says of the encoder.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Config {
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    vocab_size: usize,
    pub(super) max_position_embeddings: usize,
    #[serde(default = "two")]
    type_vocab_size: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f64,
    #[serde(default)]
    hidden_act: Option<String>,
    #[serde(default)]
    model_type: Option<String>,
}

fn two() -> usize {
    2
}

fn default_eps() -> f64 {
    1e-12
}

impl Config {
    /// Why this encoder cannot run here, if it cannot.
    pub(super) fn unsupported(&self) -> Option<String> {
        let kind = self.model_type.as_deref().unwrap_or("bert");
        if !matches!(kind, "bert") {
            return Some(format!("model_type {kind:?} is not a BERT encoder"));
        }
        match self.hidden_act.as_deref().unwrap_or("gelu") {
            "gelu" => {}
            other => return Some(format!("hidden_act {other:?} is not supported (gelu is)")),
        }
        (self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads))
        .then(|| "hidden_size is not a multiple of num_attention_heads".to_owned())
    }

    pub(super) fn hidden_size(&self) -> usize {
        self.hidden_size
    }
}

pub(super) struct Layer {
    pub(super) query: Linear,
    pub(super) key: Linear,
    pub(super) value: Linear,
    pub(super) attention_out: Linear,
    pub(super) attention_norm: LayerNorm,
    pub(super) up: Linear,
    pub(super) down: Linear,
    pub(super) out_norm: LayerNorm,
}

/// The encoder's weights (which the questions' encoder, `question.rs`,
/// is made from).
pub(super) struct Bert {
    pub(super) words: Embedding,
    pub(super) positions: Embedding,
    pub(super) token_types: Embedding,
    pub(super) norm: LayerNorm,
    pub(super) layers: Vec<Layer>,
    pub(super) heads: usize,
    /// The layer norms' epsilon.
    pub(super) eps: f64,
}

impl Bert {
    /// Reads the weights; some checkpoints nest them under `bert.`.
    pub(super) fn load(vb: VarBuilder<'_>, cfg: &Config) -> Result<Bert> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let h = cfg.hidden_size;
        let norm = |vb: VarBuilder<'_>| candle_nn::layer_norm(h, cfg.layer_norm_eps, vb);
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| {
                let l = vb.pp(format!("encoder.layer.{i}"));
                Ok(Layer {
                    query: candle_nn::linear(h, h, l.pp("attention.self.query"))?,
                    key: candle_nn::linear(h, h, l.pp("attention.self.key"))?,
                    value: candle_nn::linear(h, h, l.pp("attention.self.value"))?,
                    attention_out: candle_nn::linear(h, h, l.pp("attention.output.dense"))?,
                    attention_norm: norm(l.pp("attention.output.LayerNorm"))?,
                    up: candle_nn::linear(h, cfg.intermediate_size, l.pp("intermediate.dense"))?,
                    down: candle_nn::linear(cfg.intermediate_size, h, l.pp("output.dense"))?,
                    out_norm: norm(l.pp("output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let e = vb.pp("embeddings");
        Ok(Bert {
            words: candle_nn::embedding(cfg.vocab_size, h, e.pp("word_embeddings"))?,
            positions: candle_nn::embedding(
                cfg.max_position_embeddings,
                h,
                e.pp("position_embeddings"),
            )?,
            token_types: candle_nn::embedding(
                cfg.type_vocab_size,
                h,
                e.pp("token_type_embeddings"),
            )?,
            norm: norm(e.pp("LayerNorm"))?,
            layers,
            heads: cfg.num_attention_heads,
            eps: cfg.layer_norm_eps,
        })
    }

    /// The last hidden states, `[batch, tokens, hidden]`, of token ids
    /// `[batch, tokens]` whose `mask` is 1 where a token is real and 0
    /// where it pads.
    pub(super) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, len) = ids.dims2()?;
        let device = ids.device();
        let positions = Tensor::arange(0u32, len as u32, device)?
            .unsqueeze(0)?
            .broadcast_as((batch, len))?;
        let mut x = self
            .words
            .forward(ids)?
            .add(&self.positions.forward(&positions)?)?
            .add(&self.token_types.forward(&ids.zeros_like()?)?)?;
        x = self.norm.forward(&x)?;
        let hidden = x.dim(2)?;
        let head = hidden / self.heads;
        // 0 where attended, a large negative number where padded.
        let padding = ((mask.to_dtype(DType::F32)? - 1.0)? * 1e9)?.reshape((batch, 1, 1, len))?;
        let scale = 1.0 / (head as f64).sqrt();
        for layer in &self.layers {
            let heads = |t: Tensor| {
                t.reshape((batch, len, self.heads, head))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let q = heads(layer.query.forward(&x)?)?;
            let k = heads(layer.key.forward(&x)?)?;
            let v = heads(layer.value.forward(&x)?)?;
            let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(&padding)?;
            let weights = candle_nn::ops::softmax_last_dim(&scores)?;
            let attended = weights
                .matmul(&v)?
                .transpose(1, 2)?
                .reshape((batch, len, hidden))?;
            let a = layer
                .attention_norm
                .forward(&(layer.attention_out.forward(&attended)? + &x)?)?;
            let up = layer.up.forward(&a)?.gelu_erf()?;
            x = layer.out_norm.forward(&(layer.down.forward(&up)? + &a)?)?;
        }
        Ok(x)
    }
}

#!/usr/bin/env bash
# Mult-Adds against hand arithmetic (docs/dataflow.md, "Against hand arithmetic"): one forward
# of a fresh model (batch 1, 128 tokens) on the bundled example and on candle-transformers
# decoders with their public configs, and one image through encoders and conv nets (vit, resnet50,
# vgg16, convnext-tiny; a conv net's config given by `--arg`). Each total must be complete (no
# "at least", except the two rows that say why) and equal to the hand arithmetic in
# docs/dataflow.md; for a decoder
#   V*h + T*L*(h*(H+2K)*d + H*d*h + m*h*I) + T*T*L*2*H*d
# (lm_head on the last position; q, k, v, o and the m MLP matrices per token; the attention's two
# matmuls per query and key position). The candle rows need CG_CANDLE_SRC; without it only the
# bundled example runs.
# Usage: mult_adds_truth.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
# name | crate | root | config | input shape | hand total [| extra flags]
rows=(
  "tiny-llama (bundled)|$root/examples/tiny-llama||$root/examples/tiny-llama/config.json|b=1,seq_len=128|405,798,912"
)
if [ -n "${CG_CANDLE_SRC:-}" ]; then
  ct="$CG_CANDLE_SRC/candle-transformers"; p="$root/tools/published"
  rows+=(
    "OLMo-1B|$ct|models::olmo::Model|$p/olmo-1b.json|b_size=1,seq_len=128|138,615,717,888"
    "Mistral-7B-v0.1|$ct|models::mistral::Model|$p/mistral-7b-v0.1.json|b_size=1,seq_len=128|897,779,236,864"
    "starcoder2-3b|$ct|models::starcoder2::Model|$p/starcoder2-3b.json|b_size=1,seq_len=128|371,598,557,184"
    "Qwen2-0.5B|$ct|models::qwen2::ModelForCausalLM|$p/qwen2-0.5b.json|b_size=1,seq_len=128|46,642,577,408"
    "gemma-7b (16 heads of 256: q projects 3072 up to 4096)|$ct|models::gemma::Model|$p/gemma-7b.json|b_size=1,seq_len=128|996,681,973,760"
    "gemma-2-2b|$ct|models::gemma2::Model|$p/gemma-2-2b.json|b_size=1,seq_len=128|261,441,978,368"
    "gemma-2b|$ct|models::gemma::Model|$p/gemma-2b.json|b_size=1,seq_len=128|255,403,753,472"
    "TinyLlama-1.1B|$ct|models::llama::Llama|$p/tinyllama-1.1b.json|b_sz=1,seq_len=128|125,559,111,680"
    "Phi-3-mini-4k|$ct|models::phi3::Model|$p/phi-3-mini-4k.json|b_size=1,seq_len=128|467,176,194,048"
    "stablelm-2-1_6b|$ct|models::stable_lm::Model|$p/stablelm-2-1_6b.json|b_size=1,seq_len=128|159,656,181,760"
    "Llama-3.2-1B (tied head)|$ct|models::llama::Llama|$p/llama-3.2-1b.json|b_sz=1,seq_len=128|125,890,461,696"
    "SmolLM-135M (tied head)|$ct|models::llama::Llama|$p/smollm-135m.json|b_sz=1,seq_len=128|14,184,087,552"
    "phi-2 (partial rotary, fc1/fc2: m = 2)|$ct|models::phi::Model|$p/phi-2.json|b_size=1,seq_len=128|324,937,973,760"
    "phi-1_5|$ct|models::phi::Model|$p/phi-1_5.json|b_size=1,seq_len=128|156,334,292,992"
    "distilbert-base-uncased (encoder, 128 tokens)|$ct|models::distilbert::DistilBertModel|$p/distilbert-base-uncased.json|input_ids=1x128|5,586,812,928"
    "bert-base-uncased (encoder, 128 tokens)|$ct|models::bert::BertModel|$p/bert-base-uncased.json|input_ids=1x128|11,173,625,856"
    "bert-large-uncased (encoder, 128 tokens)|$ct|models::bert::BertModel|$p/bert-large-uncased.json|input_ids=1x128|39,460,012,032"
    "falcon-7b (lower bound: the rotary frequencies' small matmul has no shape)|$ct|models::falcon::Falcon|$p/falcon-7b.json|b_sz=1,seq_len=128|at least 853,182,021,632"
    "Qwen3-0.6B (lower bound: the CPU-flash path's kernel has no count)|$ct|models::qwen3::ModelForCausalLM|$p/qwen3-0.6b.json|input=1x128|at least 56,527,028,224"
    "vit-base-patch16-224 (encoder, one 224x224 image)|$ct|models::vit::Model|$p/vit-base-patch16-224.json|xs=1x3x224x224|17,563,828,224|--arg num_labels=1000"
    "resnet50 (conv net, one 224x224 image)|$ct|models::resnet::resnet50||xs=1x3x224x224|4,089,184,256|--arg num_classes=1000"
    "vgg16 (conv net, pre-logits built by Linear::new from reshaped tensors)|$ct|models::vgg::Vgg||xs=3x224x224|15,470,264,320|--arg model=Models::Vgg16"
    "convnext-tiny (conv net, config built by Config::tiny())|$ct|models::convnext::convnext||xs=1x3x224x224|4,455,531,264|--arg cfg=Config::tiny() --arg nclasses=1000"
    "whisper-tiny (encoder exact, 18,468,864,000; lower bound: the decoder's cross-attention cache arm is undecided)|$ct|models::whisper::model::Whisper|$p/whisper-tiny.json|model.encoder.x=1x80x3000,model.decoder.x=1x4,model.decoder.xa=1x1500x384|at least 18,520,375,296"
  )
else
  echo "CG_CANDLE_SRC not set: only the bundled example's row runs"
fi
bad=0
for r in "${rows[@]}"; do
  IFS='|' read -r name crate model config shape want extra <<<"$r"
  args=(summary "$crate" --input-shape "$shape")
  [ -n "$config" ] && args+=(--config "$config")
  # shellcheck disable=SC2206
  [ -n "${extra:-}" ] && args+=($extra)
  [ -n "$model" ] && args+=(--root "$model")
  got="$("$cg" "${args[@]}" 2>/dev/null | sed -n '/(counted layers)/!s/^Mult-adds per forward pass[^:]*: //p')"
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: summary says '$got', by hand '$want'"; bad=1
  else
    echo "ok   $name: $want"
  fi
done
exit "$bad"

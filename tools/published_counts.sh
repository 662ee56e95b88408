#!/usr/bin/env bash
# Parameter totals of candle-transformers models against the counts their publishers state: the
# truth table (docs/inventory.md, "Against published counts").
#
#   tools/published_counts.sh BIN            # print the Markdown table
#   tools/published_counts.sh BIN --check    # also exit 1 when a total is not the one below
#
# Runs `BIN summary $CG_CANDLE_SRC/candle-transformers --root T [--config tools/published/X.json]
# [flags]` for each model and prints the tool's total line next to the published count. The
# config files hold the public models' config.json values. Each row also holds the total this
# build must print: equal to the published count, or differing by what the last column explains
# (hand-computed), so a change to a rule that moves any figure fails `--check`
# (tests/e2e/published_counts.sh).
set -euo pipefail
bin="$1"
check="${2:-}"
here="$(cd "$(dirname "$0")" && pwd)"
ct="${CG_CANDLE_SRC:?set CG_CANDLE_SRC to a candle checkout}/candle-transformers"

# model | root | config | extra flags | the tool's total | published count | what differs, or covers
models=(
  "bert-base-uncased|models::bert::BertModel|bert-base-uncased.json||108,891,648|108,891,648|BertModel without pooler"
  "distilbert-base-uncased|models::distilbert::DistilBertModel|distilbert-base-uncased.json||66,362,880|66,362,880|DistilBertModel"
  "Qwen2-0.5B|models::qwen2::ModelForCausalLM|qwen2-0.5b.json||494,032,768 to 630,167,424|494,032,768|lm_head is read only when the checkpoint holds lm_head.weight (contains_tensor): tied, the low end"
  "Qwen2-7B|models::qwen2::ModelForCausalLM|qwen2-7b.json||7,070,619,136 to 7,615,616,512|7,615,616,512|the checkpoint holds lm_head.weight: the high end"
  "vit-base-patch16-224|models::vit::Model|vit-base-patch16-224.json|--arg num_labels=1000|86,567,656|86,567,656|with the 1000-class head"
  "falcon-7b|models::falcon::Falcon|falcon-7b.json||7,217,189,760|6,921,720,704|candle's Falcon reads lm_head.weight as its own [65024, 4544] tensor: +295,469,056"
  "t5-v1_1-xxl encoder|models::t5::T5EncoderModel|t5-v1_1-xxl.json||4,762,310,656|≈4.76B|gated-gelu feed-forward"
  "t5-small|models::t5::T5ForConditionalGeneration|t5-small.json||60,506,624|60,506,624|encoder and decoder, lm_head tied to shared"
  "starcoder2-3b|models::starcoder2::Model|starcoder2-3b.json||3,030,371,328|3,030,371,328|lm_head tied to embed_tokens"
  "Llama-2-7b|models::llama::Llama|llama-2-7b.json||6,738,415,616|6,738,415,616|untied lm_head"
  "TinyLlama-1.1B|models::llama::Llama|tinyllama-1.1b.json||1,100,048,384|1,100,048,384|grouped-query attention, 4 kv heads"
  "Meta-Llama-3-8B|models::llama::Llama|llama-3-8b.json||8,030,261,248|8,030,261,248|128,256-token vocabulary"
  "Mistral-7B-v0.1|models::mistral::Model|mistral-7b-v0.1.json||7,241,732,096|7,241,732,096|8 kv heads"
  "Mixtral-8x7B-v0.1|models::mixtral::Model||--arg cfg=Config::v0_1_8x7b(false)|46,702,792,704|46,702,792,704|8 experts per layer; candle builds its config in code (the hub file's \"sliding_window\": null is refused by its usize field)"
  "gemma-2b|models::gemma::Model|gemma-2b.json||2,506,172,416|2,506,172,416|multi-query attention, lm_head tied"
  "phi-2|models::phi::Model|phi-2.json||2,779,683,840|2,779,683,840|biased linears, untied lm_head with bias"
  "mamba-130m|models::mamba::Model|mamba-130m.json||129,135,360|129,135,360|vocabulary padded to 50,280, lm_head tied"
  "whisper-tiny|models::whisper::model::Whisper|whisper-tiny.json||37,184,640|37,760,640|candle computes the encoder's positional embedding (sinusoids), the checkpoint stores it: -1500 x 384 = -576,000"
  "convnext-tiny|models::convnext::convnext||--arg cfg=Config::tiny() --arg nclasses=1000|28,589,128 to 28,642,120|28,589,128|the GRN of ConvNeXt-V2 loads only when the checkpoint has it (its Result is matched, not propagated): a v1 checkpoint is the low end"
  "resnet18|models::resnet::resnet18||--arg num_classes=1000|11,699,112|11,689,512|the tool also counts the 9,600 BatchNorm running statistics the checkpoint holds (buffers, not torchvision parameters)"
  "resnet50|models::resnet::resnet50||--arg num_classes=1000|25,610,152|25,557,032|+53,120 BatchNorm running statistics (buffers)"
  "resnet34|models::resnet::resnet34||--arg num_classes=1000|21,814,696|21,797,672|+17,024 BatchNorm running statistics (2 x 8,512 channels)"
  "resnet101|models::resnet::resnet101||--arg num_classes=1000|44,654,504|44,549,160|+105,344 BatchNorm running statistics (2 x 52,672 channels)"
  "resnet152|models::resnet::resnet152||--arg num_classes=1000|60,344,232|60,192,808|+151,424 BatchNorm running statistics (2 x 75,712 channels)"
  "vgg16|models::vgg::Vgg||--arg model=Models::Vgg16|138,357,544|138,357,544|the variant chosen by an enum argument"
  "bert-large-uncased|models::bert::BertModel|bert-large-uncased.json||334,092,288|334,092,288|BertModel without pooler (335,141,888 - 1,049,600)"
  "t5-base|models::t5::T5ForConditionalGeneration|t5-base.json||222,903,552|222,903,552|encoder and decoder, lm_head tied to shared"
  "phi-1_5|models::phi::Model|phi-1_5.json||1,418,270,720|1,418,270,720|\"num_key_value_heads\": null, partial rotary 0.5"
  "gemma-2-2b|models::gemma2::Model|gemma-2-2b.json||2,614,341,888|2,614,341,888|head_dim 256 apart from hidden 2304, 4 kv heads, four norms per layer"
  "Llama-3.2-1B|models::llama::Llama|llama-3.2-1b.json||1,235,814,400|1,235,814,400|lm_head tied, llama3 rope scaling"
  "Qwen3-0.6B|models::qwen3::ModelForCausalLM|qwen3-0.6b.json||596,049,920|596,049,920|q/k RMSNorm per head, head_dim 128 apart from hidden 1024, tied"
  "Phi-3-mini-4k|models::phi3::Model|phi-3-mini-4k.json||3,821,079,552|3,821,079,552|fused qkv_proj and gate_up_proj"
  "stablelm-2-1_6b|models::stable_lm::Model|stablelm-2-1_6b.json||1,644,515,328|1,644,515,328|qkv biases, LayerNorm with bias"
  "OLMo-1B|models::olmo::Model|olmo-1b.json||1,176,764,416|1,176,764,416|non-parametric LayerNorm (no weights), tied"
  "SmolLM-135M|models::llama::Llama|smollm-135m.json||134,515,008|134,515,008|9 heads, 3 kv heads, 30 layers, tied"
  "gemma-7b|models::gemma::Model|gemma-7b.json||8,537,680,896|8,537,680,896|16 heads of 256 over hidden 3072 (q projects up to 4096)"
  "DeepSeek-V2-Lite|models::deepseek2::DeepSeekV2|deepseek-v2-lite.json||15,706,484,224|15,706,484,224|MLA; layer 0 dense (\`first_k_dense_replace\` 1), 26 MoE layers of 64 routed and 2 shared experts, each decided by \`layer_idx.is_multiple_of(moe_layer_freq)\`"
)
echo "| model | \`summary\` total | published | difference or scope |"
echo "| --- | --- | --- | --- |"
bad=0
for m in "${models[@]}"; do
  IFS='|' read -r name root config extra expect published covers <<<"$m"
  args=(summary "$ct" --root "$root")
  [ -n "$config" ] && args+=(--config "$here/published/$config")
  # shellcheck disable=SC2206
  [ -n "$extra" ] && args+=($extra)
  total="$("$bin" "${args[@]}" 2>/dev/null |
    sed -n 's/^Total params: //p' | sed 's/ (mutually exclusive alternatives.*//')" || true
  echo "| $name (\`$root\`${extra:+ \`$extra\`}) | $total | $published | $covers |"
  if [ "$total" != "$expect" ]; then
    echo "MISMATCH: $name: summary prints '$total', the truth table holds '$expect'" >&2
    bad=1
  fi
done
if [ "$check" = "--check" ] && [ "$bad" -ne 0 ]; then exit 1; fi
exit 0

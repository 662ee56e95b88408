#!/usr/bin/env bash
# Parameter totals of candle-transformers models against the counts their publishers state.
#
#   tools/published_counts.sh BIN
#
# Runs `BIN summary $CG_CANDLE_SRC/candle-transformers --root T --config tools/published/X.json`
# for each model below and prints a Markdown table: the tool's total line next to the published
# count. The config files hold the public models' config.json values (see docs/inventory.md).
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
ct="${CG_CANDLE_SRC:?set CG_CANDLE_SRC to a candle checkout}/candle-transformers"

# model | root | config | extra flags | published count | what the published count covers
models=(
  "bert-base-uncased|models::bert::BertModel|bert-base-uncased.json||108,891,648|BertModel without pooler"
  "distilbert-base-uncased|models::distilbert::DistilBertModel|distilbert-base-uncased.json||66,362,880|DistilBertModel"
  "Qwen2-0.5B|models::qwen2::ModelForCausalLM|qwen2-0.5b.json||494,032,768|tied lm_head (no lm_head.weight in the checkpoint)"
  "vit-base-patch16-224|models::vit::Model|vit-base-patch16-224.json|--arg num_labels=1000|86,567,656|with the 1000-class head"
  "falcon-7b|models::falcon::Falcon|falcon-7b.json||6,921,720,704|lm_head tied to word_embeddings, counted once"
  "t5-v1_1-xxl encoder|models::t5::T5EncoderModel|t5-v1_1-xxl.json||≈4.76B|gated-gelu feed-forward"
  "t5-small|models::t5::T5ForConditionalGeneration|t5-small.json||60,506,624|encoder and decoder, lm_head tied to shared"
  "starcoder2-3b|models::starcoder2::Model|starcoder2-3b.json||3,030,371,328|lm_head tied to embed_tokens"
)
echo "| model | \`summary\` total | published |"
echo "| --- | --- | --- |"
for m in "${models[@]}"; do
  IFS='|' read -r name root config extra published covers <<<"$m"
  # shellcheck disable=SC2086
  total="$("$bin" summary "$ct" --root "$root" --config "$here/published/$config" $extra 2>/dev/null |
    sed -n 's/^Total params: //p' | sed 's/ (mutually exclusive alternatives.*//')"
  echo "| $name ($root${extra:+ $extra}) | $total | $published ($covers) |"
done

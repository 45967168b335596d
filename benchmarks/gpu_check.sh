#!/usr/bin/env bash
# The CUDA paths on one GPU, with tiny local models (no download): the hf backend in bf16,
# text and vision; `mmnp train` with every algorithm in bf16; SFT; DISA's estimate -> fit ->
# train. Prints one PASS/FAIL line per check and ends non-zero if any failed.
#   bash benchmarks/gpu_check.sh [WORKDIR]
set -u
W=${1:-/tmp/mmnp-gpu}
mkdir -p "$W"
fails=0
check() {  # check NAME CMD...: run, keep the log, one line of verdict
  local name=$1; shift
  local t0=$SECONDS
  if "$@" >"$W/$name.log" 2>&1; then echo "PASS $name ($((SECONDS - t0)) s)"
  else echo "FAIL $name ($((SECONDS - t0)) s)"; tail -15 "$W/$name.log"; fails=$((fails + 1)); fi
}
python3 -c "import torch; assert torch.cuda.is_available(); print('torch', torch.__version__, torch.cuda.get_device_name())"
check tiny-text mmnp tiny-model --out "$W/tiny" --warm-steps 30
check tiny-vl mmnp tiny-model --vision --out "$W/tinyvl" --warm-steps 5
check data mmnp generate --tasks knapsack,max_clique,subset_sum --difficulty easy --count 4 --out "$W/data" --no-optimal --overwrite
check eval-hf-bf16 mmnp eval --model "hf:$W/tiny" --model-args device=cuda,dtype=bfloat16 --data "$W/data" \
  --samples 2 --temperature 0.7 --max-tokens 48 --output-path "$W/results" --max-fail-rate 0
check eval-hf-vl mmnp eval --model "hf:$W/tinyvl" --model-args device=cuda --data "$W/data" --modality image \
  --max-tokens 32 --output-path "$W/results"
for algo in grpo dmpo progrpo flowrl; do
  check "train-$algo" mmnp train --algo "$algo" --model "$W/tiny" --tasks knapsack,subset_sum --difficulty easy \
    --count 4 --max-steps 2 --num-generations 4 --per-device-train-batch-size 4 --max-completion-length 32 \
    --report-to none --save-steps 1000 --output-dir "$W/train-$algo"
done
check train-vl-image mmnp train --algo dmpo --model "$W/tinyvl" --modality image --tasks knapsack --difficulty easy \
  --count 4 --max-steps 2 --num-generations 4 --per-device-train-batch-size 4 --max-completion-length 24 \
  --image-size 224 --report-to none --save-steps 1000 --output-dir "$W/train-vl"
check sft mmnp sft --model "$W/tiny" --tasks knapsack --difficulty easy --count 8 --max-steps 4 --out "$W/sft"
check train-after-sft mmnp train --algo grpo --model "$W/sft" --tasks knapsack --difficulty easy --count 4 \
  --max-steps 1 --num-generations 4 --per-device-train-batch-size 4 --max-completion-length 32 --report-to none \
  --save-steps 1000 --output-dir "$W/train-sft"
check disa-estimate mmnp disa estimate --ref "$W/tiny" --proposal "$W/tiny" --out "$W/disa" --tasks knapsack,subset_sum \
  --difficulty easy --prompts 12 --samples 4 --max-tokens 32
check disa-fit mmnp disa fit "$W/disa" --epochs 50
check train-disa mmnp train --algo disa --logz "$W/disa" --model "$W/tiny" --tasks knapsack,subset_sum \
  --difficulty easy --count 4 --max-steps 2 --num-generations 4 --per-device-train-batch-size 4 \
  --max-completion-length 32 --report-to none --save-steps 1000 --output-dir "$W/train-disa"
check eval-trained mmnp eval --model "hf:$W/train-dmpo" --model-args device=cuda --data "$W/data" --max-tokens 32 \
  --output-path "$W/results"
echo "failed checks: $fails"
exit $((fails > 0))

# Sourced by the K-quant ladder scripts: kld_row NAME MODEL QUANTIZE_OUTPUT prints one
# markdown row (bits per weight from quantize's "wrote" line, file bytes, KLD mean / p99
# and top-1 agreement of MODEL against "$D/ref.bin"), running "$B" eval kld.
kld_row() {
  local out bpw
  bpw=$(awk '/^wrote .*bits per weight/ {print $4}' <<<"$3")
  out=$("$B" eval kld -m "$2" --ref-logits "$D/ref.bin" -t 2 2>/dev/null)
  awk -v t="$1" -v b="$(stat -c %s "$2")" -v w="$bpw" '
    /^kld/ {mean=$3; p99=$7} /^top1/ {agree=$3}
    END {printf "| %s | %s | %d | %s | %s | %s |\n", t, w, b, mean, p99, agree}' <<<"$out"
}

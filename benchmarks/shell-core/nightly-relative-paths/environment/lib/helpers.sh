# Shared helpers for the nightly jobs.
log() { echo "[nightly] $*" >&2; }
summarize() {
  # count events per type, most common first, ties by name
  cut -d' ' -f2 "$1" | sort | uniq -c | sort -k1,1nr -k2,2 | awk '{print $2 "=" $1}'
}

# csv_col.sh — sourced by the e2e tests that read results.csv: csv_col FILE KEY ROW prints the field
# of column KEY (by header name) in data row ROW (0-based: the point id of an unsharded run).
# results.csv quotes a field that holds commas (a sweep's list values): the split honours quotes.
csv_col() { awk -v key="$2" -v row="$3" '
    function split_csv(line, f,   n, i, ch, q, cur) {
        n = 0; q = 0; cur = ""
        for (i = 1; i <= length(line); i++) {
            ch = substr(line, i, 1)
            if (ch == "\"") q = !q
            else if (ch == "," && !q) { f[++n] = cur; cur = "" }
            else cur = cur ch
        }
        f[++n] = cur
        return n
    }
    NR == 1 { n = split_csv($0, h); for (i = 1; i <= n; i++) if (h[i] == key) c = i; next }
    NR == row + 2 { split_csv($0, f); print f[c] }' "$1"; }

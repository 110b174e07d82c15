# Sourced by the bench scripts: the one measure of "the stack reaches thread start".
# thread_start_share ARCPROF CAPTURE COMM prints "PERCENT SAMPLES" over COMM's
# samples that have a user stack: the share whose outermost user frame is where
# a thread starts (_start, __libc_start_main, start_thread, clone3), or an
# unnamed entry with such a frame, or ld.so's _dl_start, right after it (a
# stripped program's own _start has no name).
thread_start_share() {
  "$1" export --format folded -i "$2" --comm "$3" |
    awk -v re='^(_start|__libc_start_main[^;]*|__libc_start_call_main|start_thread|clone3?|__clone3?)$' '
      {n=$NF; sub(/ [0-9]+$/, ""); k=split($0, f, ";");
       u=0; a=""; b=""; for (i=2; i<=k; i++) if (f[i] !~ /_\[k\]$/) { u++; if (u==1) a=f[i]; if (u==2) b=f[i] }
       if (u == 0) next; t+=n; if (a ~ re || (a ~ /^\[/ && (b ~ re || b == "_dl_start"))) c+=n}
      END {printf "%.2f %d\n", t ? 100*c/t : 0, t}'
}

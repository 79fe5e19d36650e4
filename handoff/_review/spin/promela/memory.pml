/* Take request hc out of worker w's idle requests (if there). */
inline unidle() {
  y = 0;
  do
  :: y < nidle[w] && IDLE(w, y) != hc -> y++
  :: else -> break
  od;
  if
  :: y < nidle[w] ->
       do
       :: y + 1 < nidle[w] -> IDLE(w, y) = IDLE(w, y + 1); y++
       :: else -> break
       od;
       nidle[w]--; IDLE(w, nidle[w]) = 0
  :: else -> skip
  fi;
  y = 0
}

/* A bounded memory keeps its idle requests in order: held or forgotten, hc is not among
   them; idle before, it stays in its place; newly idle, it is the most recent, and the
   longest idle is forgotten when the worker would remember one idle request too many.
   (remembered, holding: what the worker had of hc before.) */
inline place() {
  if
  :: !BOUNDED(w) -> skip
  :: HELD(w, hc) > 0 || !REMEMBERS(w, hc) -> unidle()
  :: else ->
       if
       :: remembered && !holding -> skip
       :: else ->
            IDLE(w, nidle[w]) = hc; nidle[w]++;
            if
            :: nidle[w] > BOUND(w) ->
                 x = IDLE(w, 0); MEM(w, x) = M_INITIAL(w); DONE(w, x) = 0;
                 for (y : 1 .. nidle[w] - 1) { IDLE(w, y - 1) = IDLE(w, y) };
                 nidle[w]--; IDLE(w, nidle[w]) = 0; x = 0; y = 0
            :: else -> skip
            fi
       fi
  fi
}

/* Worker k restarts: it forgets every request and frees every slot. */
inline restart() {
  for (y : 0 .. HANDOFFS - 1) {
    MEM(k, y) = M_INITIAL(k); HELD(k, y) = 0; DONE(k, y) = 0; IDLE(k, y) = 0
  };
  nidle[k] = 0; y = 0;
  restarted[k] = 1; restarts++
}

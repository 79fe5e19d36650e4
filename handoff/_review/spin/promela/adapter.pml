/* -- the adapter: the call becomes one chart event, the chart takes the step -- */
inline coordinator_step() {
  if
  :: c_foreign -> result = REFUSED; refusal = R_FOREIGN_FACT
  :: !c_foreign ->
       if
       :: c_kind == K_OUTCOME -> classify_outcome()
       :: else -> skip
       fi;
       chart_step()
  fi
}

// `arcprof trace` of a Java root inside the JVM (docs/java.md, "Tracing a
// Java subgraph"): entry/exit probes put into the methods of the root's call
// subgraph by class retransformation (class_probes.h), added as the methods
// are reached, counted per thread as a call tree, removed at the end or when
// arcprof's control connection closes.
//
// The protocol on the control connection (a UNIX socket arcprof listens on;
// lines of text, each under 4 KiB):
//   agent:   hello PID
//   arcprof: root CLASS METHOD        (CLASS internal: com/example/Cache)
//   agent:   calib IN_NS OUT_NS       (a probed call's cost inside and outside it)
//   agent:   started N                (N root methods probed; 0: not loaded yet)
//   arcprof: stop                     (or the connection closes: the same, silently)
//   agent:   m ID NAME                (every method counted: com.example.Cache.get)
//   agent:   n TID NODE PARENT ID CALLS ENDED THROWN INCL_NS SELF_NS UNRETURNED
//            (PARENT: 0 for a root call, else NODE of the caller + 1, same TID)
//   agent:   c NAME VALUE             (counters)
//   agent:   end
//   agent:   error TEXT               (instead of any of its lines; then it closes)
#pragma once

#include <jvmti.h>

namespace arcprof::jtrace {

// Called from Agent_OnAttach with the options "trace=SOCKET_PATH".
jint StartTrace(JavaVM* vm, const char* options);

}  // namespace arcprof::jtrace

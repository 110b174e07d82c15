// The exit codes of the arcprof command line, the only place they are chosen:
// the layers below report an ErrorKind (common/result.h), the CLI maps it.
#pragma once

#include "common/result.h"

namespace arcprof::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // usage, input or output error
inline constexpr int kExitCaptureError = 2;  // a capture or store missing, corrupt, foreign or newer
// `arcprof profile`: the first word names no command (told apart from the
// option errors of a known command, which exit 1).
inline constexpr int kExitUnknownCommand = 2;
// `arcprof trace`: any error (a root not found or not reached, a process that
// exits or is not the caller's).
inline constexpr int kExitTraceError = 2;

inline int ExitCode(const Error& error) {
  switch (error.kind) {
    case ErrorKind::kCapture: return kExitCaptureError;
    case ErrorKind::kFailed: return kExitFailure;
  }
  return kExitFailure;
}

}  // namespace arcprof::cli

// A recording session: sampler, side band, symbolizer, sample processor and
// extensions from start to stop, handing out closed time windows. `record` is
// a session with one window written to a capture file (loader/record.cpp);
// `continuous` closes a window every --window and appends it to a store
// (loader/continuous.cpp). Both drive it the same way:
//
//   auto session = RecordingSession::Start(options);   // preflight .. attach
//   while (!stop) {
//     session->Tick(wake_ns);                          // drain, poll extensions
//     if (time for a window) sink(session->CloseWindow());
//   }
//   sink(session->Stop());                             // detach, last window
//
// A window's Profile is complete on its own: frames, threads, trees, counters
// and extension rows (PTT) of [start, end) only, with meta (host, event, ...,
// start/end times) filled. Windows of one session sum to the whole recording.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "loader/record.h"
#include "model/profile.h"

namespace arcprof {

class LaunchedCommand;

// SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM (and SIGHUP unless it
// is asked for separately) set a flag instead of killing the process, so the
// recording is still written; without SA_RESTART, so a blocking poll returns
// at once. SIGPIPE is ignored (a closed stderr must not lose a recording).
// Restores the previous handlers on destruction.
class StopSignals {
 public:
  explicit StopSignals(bool hangup_reopens_log = false);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // The signal that asked to stop, 0 when none.
  static int stop_signal();
  // How many stop signals arrived (a second one cuts waits short).
  static int stop_count();
  // Whether the last stop signal was sent by a process (kill, systemd) rather
  // than the terminal, which signals the whole foreground process group.
  static bool stop_from_process();
  // True once per SIGHUP received (with hangup_reopens_log).
  static bool TakeHangup();
};

class RecordingSession {
 public:
  // Checks the options and the machine, loads and attaches the BPF programs,
  // snapshots running processes, starts the extensions and the command (if
  // any). The first window starts here.
  static Result<std::unique_ptr<RecordingSession>> Start(const RecordOptions& options);
  ~RecordingSession();

  // Waits for side-band records until wake_ns (CLOCK_MONOTONIC) or the next
  // drain, whichever is first, then drains samples and polls the extensions
  // when a drain is due. Returns why the session should end on its own
  // (the command exited, every -p process exited), or nothing.
  std::optional<std::string> Tick(uint64_t wake_ns);

  // Closes the window in progress at now and returns it; sampling goes on
  // into the next window.
  // With end_ns (CLOCK_MONOTONIC, not in the future, after the window's start)
  // the window ends exactly there: samples taken later go to the next window.
  Result<model::Profile> CloseWindow(uint64_t end_ns = 0);
  // Drains on Tick stop at end_ns until the next CloseWindow, so that a
  // window closed a little late still holds only samples up to its end.
  void SetWindowEnd(uint64_t end_ns);
  // Stops sampling (everything detached), then returns the last window.
  Result<model::Profile> Stop();
  // About how many heap bytes the window in progress holds
  // (SampleProcessor::WindowBytes; walks the window, so about once a second).
  size_t WindowBytes() const;

  LaunchedCommand* command();
  uint64_t samples() const;
  uint64_t start_monotonic_ns() const;
  // Counters of the whole session so far (for the final message).
  uint64_t lost_samples() const;
  uint64_t lost_sideband_records() const;
  // The sampling rate in use (-F, lowered to the kernel's limit).
  uint64_t frequency_hz() const;
  // Samples dropped because the final drain ran out of time.
  uint64_t unprocessed_samples() const;

  static uint64_t MonotonicNs();
  static uint64_t RealtimeNs();

 private:
  struct State;
  explicit RecordingSession(std::unique_ptr<State> state);
  Result<model::Profile> Close(bool last, uint64_t end_ns);
  std::unique_ptr<State> s_;
};

// "system", "pids 12,13" or "command ./prog args".
std::string DescribeTarget(const RecordOptions& options);

}  // namespace arcprof

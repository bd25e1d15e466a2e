// The operator's view of approvals (issue 15): `sandrun approvals list` as a table (the pending
// approvals, then the decision record: who answered what and when; `--json` for machines),
// `sandrun approvals show ID` (one record, JSON), and `sandrun approvals watch`, which follows the
// server's events and, when stdin and stdout are a terminal, shows each pending approval's whole
// command and asks:
//   approve 1a2b3c4d? [o]nce [a]lways [d]eny [s]kip:
// and sends the answer (POST /v1/approvals/{id}); without a terminal it only prints the events.
// Ctrl-C (or SIGTERM) ends it.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <string>

#include "runner/api/cli_context.h"
#include "runner/api/policy_cmd.h"

namespace sandrun::api {

// {"pending":[...],"decided":[...]} (ApprovalBroker::ListJson's shape) as text: a PENDING and a
// DECIDED section (the newest `max_decided` decisions, newest first). Commands are shortened to
// one line of at most 60 characters.
std::string RenderApprovalsTable(const rapidjson::Value& list, int64_t now_ms,
                                 size_t max_decided = 20);

// `text` as one line of at most `width` bytes that is safe to print on a terminal (a command's
// text is the agent's): C0 controls and DEL become spaces, C1 controls (as UTF-8, or raw bytes
// 0x80-0x9F outside a UTF-8 sequence, which 8-bit terminals read as CSI or OSC) and the bidi and
// zero-width characters (U+200B-U+200F, U+202A-U+202E, U+2066-U+2069) become '?',
// and a longer text is cut (not inside a UTF-8 sequence) and ends in "...".
std::string TerminalLine(const std::string& text, size_t width = 60);

int RunApprovalsShow(const GlobalOptions& global, const ApprovalsFlags& flags);
int RunApprovalsWatch(const GlobalOptions& global, const ApprovalsFlags& flags);

}  // namespace sandrun::api

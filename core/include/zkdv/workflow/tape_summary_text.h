#pragma once
// What a scanned tape holds, in the words zkdv-audit (verify, info, ingest) and the
// workstation both print.

#include <string>
#include <string_view>

#include "zkdv/util/trainer_keyring.h"

namespace zkdv {

struct TapeSummary;

// "sealed, 120 transactions, 11 snapshots, 134 records".
std::string tapeCountsText(const TapeSummary& summary);

// Who signed a tape, as trust in its key decides (TrainerKeyring::trustOf): "Signed by
// trusted key 1a2b3c4d…", "Signed by an unknown key 1a2b3c4d…", "Unsigned, though your trainer
// keyring expects a signature", "Unsigned".
std::string signatureText(SignatureTrust trust, std::string_view keyId);

}  // namespace zkdv

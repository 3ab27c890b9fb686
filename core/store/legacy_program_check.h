#pragma once
// The program check of a replay run stored before case schema 13, as its problem text and its
// tape's program kind say it (the rule the report applied before the check was stored). A
// string literal, for SQL on replay_runs: case schema 13 backfills older runs with it, and a
// run sealed before payload version 4 must still hold what it gives (run_seal.cpp), since
// those seals do not sign the column.
#define ZKDV_LEGACY_PROGRAM_CHECK_SQL                                                                                                     \
    "CASE"                                                                                                                                \
    " WHEN (SELECT t.program_kind FROM tapes t WHERE t.id = replay_runs.tape_id) NOT IN ('torchscript', 'exported-graph')"              \
    " THEN 'not-replayable'"                                                                                                              \
    " WHEN coalesce(replay_runs.problem, '') LIKE 'program digest mismatch%' THEN 'mismatched'"                                           \
    " WHEN coalesce(replay_runs.problem, '') LIKE 'the sealed program%is not in the case%' THEN 'missing'"                                \
    " WHEN coalesce(replay_runs.problem, '') LIKE '%cannot be replayed%' THEN 'not-replayable'"                                           \
    " ELSE 'matched' END"

#!/usr/bin/env python3
"""Hand-made mutation run over the guards PIT cannot reach: SQL fences in the control store, the
read-only shard sessions, the selector allow-list and the guest deadline check.

For each guard: the source is changed to remove the guard, the tests docs/contract.md cites for it
run, and the source is restored. A guard is killed when the tests fail. Usage, from the repository:

    scripts/mutate-guards.py            # every guard
    scripts/mutate-guards.py S1 J2      # some

It prints one line per guard (id, killed / SURVIVED / BROKEN, guard, the tests that failed) and exits 1 unless every
guard was killed by a failing test.
Runs through ./thresher test, so it needs what the test suite needs."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALLS = "store/src/main/java/dev/thresher/store/control/CallJournal.java"
SLOTS = "store/src/main/java/dev/thresher/store/control/ShardRunPublisher.java"
CATALOG = "store/src/main/java/dev/thresher/store/control/BindingCatalog.java"
LEASES = "store/src/main/java/dev/thresher/store/control/LeaseAcquisition.java"

# id, what the guard is, file, old text, new text, maven module(s), surefire tests, failsafe tests
GUARDS = [
    ("S1", "slot publish fence: the partition lease is live", SLOTS,
     "AND l.host_id = ? AND l.epoch = v.epoch AND l.lease_until > clock_timestamp())",
     "AND l.host_id = ? AND l.epoch = v.epoch)", "store", "ControlStoreTest", None),
    ("S2", "slot publish fence: the lease is this host's", SLOTS,
     "AND l.host_id = ? AND l.epoch = v.epoch AND l.lease_until > clock_timestamp())",
     "AND (l.host_id = ? OR true) AND l.epoch = v.epoch AND l.lease_until > clock_timestamp())",
     "store", "ControlStoreTest", None),
    ("S3", "slot publish fence: the lease is under the slot's epoch", SLOTS,
     "AND l.host_id = ? AND l.epoch = v.epoch AND l.lease_until > clock_timestamp())",
     "AND l.host_id = ? AND true AND l.lease_until > clock_timestamp())", "store", "ControlStoreTest", None),
    ("S4", "leadership: a live lease of another host is not taken over", LEASES,
     "WHERE partition_leases.host_id = EXCLUDED.host_id OR partition_leases.lease_until < now()",
     "WHERE true", "store", "ControlStoreTest", None),
    ("S5", "reduce lease: a live lease of another host is not taken over", CALLS,
     "WHERE reduce_leases.host_id = EXCLUDED.host_id OR reduce_leases.lease_until < now()\"\"\";",
     "WHERE true\"\"\";", "store", "ControlStoreTest", None),
    ("S6", "result publication: only a running invocation", CALLS,
     "WHERE j.tenant = ? AND j.wire_id = ? AND j.succeeded\n              AND i.call_id = ? AND i.state = 'running'",
     "WHERE j.tenant = ? AND j.wire_id = ? AND j.succeeded\n              AND i.call_id = ?",
     "store", "ControlStoreTest", None),
    ("S7", "result publication: only by the live reduce lease holder", CALLS,
     "AND i.deadline_at >= clock_timestamp()\n              AND EXISTS (SELECT 1 FROM reduce_leases r WHERE r.call_id = i.call_id AND r.host_id = ?\n                          AND r.lease_until > now())",
     "AND i.deadline_at >= clock_timestamp()\n              AND (? IS NOT NULL OR true)",
     "store", "ControlStoreTest", None),
    ("S8", "result publication: only while the binding is at the pinned version", CALLS,
     "AND r.lease_until > now())\n              AND i.binding_version = (SELECT max(b.version) FROM bindings b\n                                       WHERE b.tenant = i.tenant AND b.name = i.binding_name)\"\"\";",
     "AND r.lease_until > now())\"\"\";", "store", "ControlStoreTest", None),
    ("S9", "journal: the first writer of a wire id wins", SLOTS,
     "ON CONFLICT (tenant, wire_id) DO NOTHING\n                  RETURNING wire_id),",
     "ON CONFLICT (tenant, wire_id) DO UPDATE SET succeeded = EXCLUDED.succeeded, payload = EXCLUDED.payload,"
     " error_code = EXCLUDED.error_code\n                  RETURNING wire_id),", "store", "ControlStoreTest", None),
    ("S10", "retention: a running call's coordination state is kept", CALLS,
     "String notRunning = \" AND NOT EXISTS (SELECT 1 FROM invocations i WHERE i.call_id = t.call_id AND i.state = 'running')\";",
     "String notRunning = \"\";", "store", "ControlStoreTest", None),
    ("B1", "binding versions: one writer of a binding at a time", CATALOG,
     "            ControlSql.lock(c, tenant + \"/\" + name);\n            if (wasm != null) {",
     "            if (wasm != null) {", "store", "BindingCatalogTest", None),
    ("B2", "binding versions: a binding keeps its kind", CATALOG,
     "if (current.isPresent() && (current.get().selector() == null) != pins.handler()) {",
     "if (false) {", "store", "BindingCatalogTest", None),
    ("B3", "binding versions: the same pins make no new version", CATALOG,
     "if (current.isPresent() && pins.samePins(current.get())) {",
     "if (false) {", "store", "BindingCatalogTest", None),
    ("B4", "binding rollback: the version's check runs before anything is written", CATALOG,
     "            check.accept(target);\n", "", "store", "BindingCatalogTest", None),
    ("J1", "shard sessions are read-only", "server/src/main/java/dev/thresher/server/node/NodePools.java",
     "homeShard = Pools.openReadOnly(", "homeShard = Pools.open(", "tests", "none",
     "ContractIT#theCallPathDoesNotWriteUserTables"),
    ("J2", "selector WHERE allow-list", "bindings/src/main/java/dev/thresher/bindings/WhereAllowList.java",
     "        return \"'\" + e + \"' is not allowed in a selector's WHERE (\" + describe(e) + \")\";",
     "        return null;", "bindings", "SelectorTest", None),
    ("J3", "selector lexical check (comments, ';', dollar quotes, backslashes)",
     "bindings/src/main/java/dev/thresher/bindings/Selector.java",
     "        if (lexical != null) {", "        if (lexical != null && false) {", "bindings", "SelectorTest", None),
]


def run(cmd):
    """'killed' when a test failed, 'SURVIVED' when the tests passed, 'BROKEN' when the build failed otherwise."""
    out = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout
    if re.search(r"Tests run: \d+, Failures: [1-9]|Tests run: \d+, Failures: \d+, Errors: [1-9]", out):
        failed = sorted(set(re.findall(r"\[ERROR\] [\w.]*?(\w+\.\w+)(?:\([^)]*\))?(?:\[\d+\])? -- Time elapsed", out)))
        return "killed", failed
    return ("BROKEN" if re.search(r"COMPILATION ERROR|BUILD FAILURE|\[ERROR\]", out) else "SURVIVED"), []


def main(selected):
    survived = []
    killed = total = 0
    for gid, what, path, old, new, module, unit, it in GUARDS:
        if selected and gid not in selected:
            continue
        total += 1
        f = ROOT / path
        original = f.read_text()
        if original.count(old) != 1:
            print(f"{gid}\tNOT FOUND (the guard's text changed: update scripts/mutate-guards.py)\t{what}", flush=True)
            survived.append(gid)
            continue
        f.write_text(original.replace(old, new))
        try:
            # ./thresher test finds a JDK 21+ and runs Maven's verify with these arguments.
            cmd = ["./thresher", "test", "-q", "-pl", module, "-am",
                   "-Dtest=" + unit, "-Dsurefire.failIfNoSpecifiedTests=false"]
            if it:
                cmd += ["-Dit.test=" + it, "-Dfailsafe.failIfNoSpecifiedTests=false"]
            verdict, failed = run(cmd)
        finally:
            f.write_text(original)
        tests = ", ".join(failed) if failed else (unit if not it else it)
        print(f"{gid}\t{verdict}\t{what}\t{tests}", flush=True)
        if verdict != "killed":
            survived.append(gid)
        else:
            killed += 1
    print(f"{killed} of {total} guards killed"
          + (f"; not killed: {' '.join(survived)}" if survived else ""), flush=True)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(set(sys.argv[1:])))

// Package fence checks fencing tokens at the protected resource.
//
// A lease from holdfast comes with a token, a uint64 that is strictly
// greater for every new grant of the same lease name or shard, across leader
// changes and restarts. The holder passes its token with every write, and
// the resource refuses a token lower than the highest it has accepted. A
// holder that was paused, partitioned or slow, and that still believes it
// holds the lease (a zombie), is thereby refused as soon as its successor
// has written once. Expiry timers only narrow that window; this check closes
// it.
//
// # What a check guarantees
//
// For one resource (a Memory resource name, or one row of an SQL table), the
// tokens of accepted writes never decrease, in the order the writes take
// effect. The same token is accepted again, so a holder may write many times
// under one grant. A rejected write has no effect: Memory.Do does not call
// it, SQL.Update changes no row, and SQL.Guard rolls its transaction back.
// A rejection returns a *FencedError, which matches ErrFenced with
// errors.Is; the holder must stop acting under that token, not retry it.
//
// # Why the check and the write must be one step
//
// "Read the highest token, compare, then write" is not fencing: between the
// compare and the write a newer holder can write, and the stale write then
// lands on top of it. The check and the write must be atomic together. So
// Memory.Do holds the resource's lock while the write runs, and the SQL
// helper puts the check into the write itself:
//
//	UPDATE jobs SET state = ?, fence = :token WHERE id = ? AND fence <= :token
//	-- 0 rows updated: fenced out; abort.
//
// (fence <= token rather than the textbook fence < token, so that one grant
// may write more than once. Tokens are never reused by different grants, so
// equal tokens mean the same holder.)
//
// # The transaction pattern
//
// When the protected work is several statements, run them in one
// transaction that first advances the fence row and then writes (SQL.Guard
// does this):
//
//	BEGIN
//	UPDATE fences SET fence = :token WHERE key = :key AND fence <= :token -- 0 rows: ROLLBACK
//	... the holder's writes ...
//	COMMIT
//
// The UPDATE locks the fence row until the transaction ends (a row lock in
// PostgreSQL and MySQL/InnoDB, the database write lock in SQLite), so guarded
// transactions on one key are serialized, and a lower token that waited
// behind a higher one matches no row once the higher one commits. Under
// PostgreSQL's REPEATABLE READ or SERIALIZABLE the waiter gets a
// serialization failure instead; retried, it is then fenced. Every writer of
// the protected data must go through the fence row: a writer that skips it
// is not fenced.
//
// # Rows, tokens and drivers
//
// The SQL helper needs the fence row to exist: a missing row is reported as
// ErrNoRow, not ErrFenced, because it is a setup error rather than a stale
// holder. Create rows with SQL.Init (fence 0). Tokens are stored in a BIGINT;
// a token above math.MaxInt64 is refused with ErrTokenRange. holdfast's
// tokens start above the cluster's token base (the creating leader's clock
// in microseconds, about 1.8e15 today, and at most 2^62), so they are large
// numbers that still fit. SQL.Max and MaxToken read a table's highest
// token, the floor to give a cluster that is created anew
// (Cluster.TokenFloor). The helper
// reads "rows affected" as "rows matched": MySQL needs clientFoundRows=true
// in its DSN for that. Identifiers given to NewSQL must be plain SQL
// identifiers, so that nothing can be injected through them; the SET text
// given to SQL.Update is SQL, to be built from constants, with values passed
// as arguments.
//
// # What is not guaranteed
//
//   - A resource that cannot compare tokens (a third-party API, an email
//     sender, a printer) cannot be fenced. There, make the effect idempotent
//     with an idempotency key instead.
//   - Fencing orders writers; it does not make a zombie stop. Work the zombie
//     does outside the fenced resource is not undone.
//   - Tokens are compared per resource. Two resources written by one holder
//     are fenced independently unless one transaction covers both.
//   - Memory is one process's memory: it fences goroutines or callers of one
//     process, and forgets everything on restart.
//   - Tokens must come from a monotonic issuer (holdfast's raft-replicated
//     counter). A lock service that can hand out the same token twice
//     fences nothing.
//
// # Metrics
//
// holdfast_fence_rejections_total{kind="memory"|"sql"} counts rejections. It
// is registered only on a Registerer the caller passes (MemoryConfig.Registerer,
// SQLConfig.Registerer); instances on one Registerer share it.
package fence

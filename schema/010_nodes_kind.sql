-- Whose node count a result carries (protocol 4: RESULT.nodes_kind): 0 the CPU kernels' (and the
-- GPU's parity kernel, which counts the same nodes), 1 the fast GPU kernel's own (its steps, whose
-- number also moves with the worker's settings: N=12 gives 132,356, 170,435 and 159,206 with 4, 6
-- and 8 rows left to the GPU). Quorums, spot-checks and later results compare nodes only between
-- two results of kind 0; totals, unique counts and residues always.
ALTER TABLE shards ADD COLUMN nodes_kind INTEGER NOT NULL DEFAULT 0 CHECK (nodes_kind BETWEEN 0 AND 1);
ALTER TABLE checks ADD COLUMN nodes_kind INTEGER NOT NULL DEFAULT 0 CHECK (nodes_kind BETWEEN 0 AND 1);
ALTER TABLE evidence ADD COLUMN nodes_kind INTEGER NOT NULL DEFAULT 0 CHECK (nodes_kind BETWEEN 0 AND 1);

-- A job's nodes (nodes_lo, nodes_hi) stay a sum of one unit, the CPU kernels' nodes, over its done
-- shards of kind 0; the fast GPU kernel's nodes are summed apart, with the number of done shards
-- whose result carries them (fast_shards <= shards_done). Every store_job_move keeps both in step.
ALTER TABLE jobs ADD COLUMN fast_nodes_lo INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN fast_nodes_hi INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN fast_shards INTEGER NOT NULL DEFAULT 0;

-- Who may countersign a merge (#47): the people whose turn or approval put content into a change,
-- recorded per file when the content is written (a tool's write, a program's or the coding CLI's,
-- files people sent) — never rebuilt from commit trailers, which say only whose turn committed.
-- A row says: on this branch, this person (`how`: as the requester of the turn, or as the person who
-- approved the call) is behind this content of this path. `content` is the file as it was then
-- (git mode and object id, or 'deleted'): content already recorded is not attributed again, so a
-- turn that only commits what another wrote does not make its requester an author. None of a
-- branch's people may give its merge the second signature. Rows live until the branch is merged or
-- discarded. Owner: src/repos/authors-store.ts.
CREATE TABLE countersign.change_authors (
  id bigserial PRIMARY KEY,
  repo text NOT NULL,
  branch text NOT NULL,
  path text NOT NULL,
  person text NOT NULL,
  how text NOT NULL CHECK (how IN ('requested', 'approved')),
  content text NOT NULL,
  work_item_id uuid,
  recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (repo, branch, path, content, person, how)
);

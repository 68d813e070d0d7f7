-- The reply outbox (#35): what a finished turn still has to show, delivered apart from the worker
-- slot that computed it. One row per work item's reply (a newer text for the same reply replaces
-- the pending one: the final wins). `locked_by` is the worker process (countersign.worker_processes)
-- delivering it; a row whose process is gone is taken over by any live one.
CREATE TABLE countersign.reply_outbox (
  seq bigserial PRIMARY KEY,
  work_item_id uuid NOT NULL UNIQUE,
  target jsonb NOT NULL,
  -- Where the reply stands on the platform (ReplyState): posted message ids, sealed parts. Updated
  -- after every post, so a takeover edits the messages instead of posting them again.
  reply_state jsonb NOT NULL,
  text text NOT NULL,
  buttons jsonb NOT NULL DEFAULT '[]',
  -- What to announce once the text is visible (the turn's event), opaque to the outbox.
  announce jsonb NOT NULL,
  locked_by text,
  attempts int NOT NULL DEFAULT 0,
  available_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX reply_outbox_available ON countersign.reply_outbox (available_at, seq);

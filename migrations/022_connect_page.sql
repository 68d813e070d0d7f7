-- The Connect link leads to the bot's own page first (#34): it names whose chat account the sign-in
-- will be attached to, so a person sent someone else's link sees it is not theirs before signing in.
ALTER TABLE countersign.oauth_states ADD COLUMN authorization_url text;
ALTER TABLE countersign.oauth_states ADD COLUMN person_label text;

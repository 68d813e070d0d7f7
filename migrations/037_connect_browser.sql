-- A Connect link completes only in the browser that confirmed it (#47 §3, OAuth login CSRF): the
-- Connect page's POST sets a random cookie, and only its SHA-256 is kept here; the callback compares
-- it with the cookie the browser brings back. Null until confirmed, and a null matches no cookie.
ALTER TABLE countersign.oauth_states ADD COLUMN browser_hash text;

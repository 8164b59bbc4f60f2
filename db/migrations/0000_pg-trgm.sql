-- pg_trgm backs the substring searches (products.search_text, orders customer search).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

#!/bin/sh
# Run once by the postgres image when the primary's data folder is created: lets the
# replica stream from it.
set -e
echo "host replication storefront all scram-sha-256" >> "$PGDATA/pg_hba.conf"

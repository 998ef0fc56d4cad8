#!/usr/bin/env sh
# The services `npm test` needs, started when they are not running (Debian, as root): PostgreSQL
# (its first cluster), MariaDB and Redis on 127.0.0.1, then the test databases created
# (PG_DATABASE / MYSQL_DATABASE, default `test`). `.ci/run` runs it; so can you:
#   sh scripts/services.sh
set -eu

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
fi
if ! mysqladmin ping -h 127.0.0.1 -u root --silent >/dev/null 2>&1; then
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/tests.log
fi
for i in $(seq 1 60); do
  pg_isready -q -h 127.0.0.1 -p 5432 && mysqladmin ping -h 127.0.0.1 -u root --silent >/dev/null 2>&1 \
    && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break
  sleep 1
done
pg_isready -h 127.0.0.1 -p 5432
mysqladmin ping -h 127.0.0.1 -u root
redis-cli -h 127.0.0.1 -p 6379 ping

pg_db="${PG_DATABASE:-test}"
mysql_db="${MYSQL_DATABASE:-test}"
psql -h 127.0.0.1 -U postgres -tc "select 1 from pg_database where datname = '$pg_db'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -c "create database \"$pg_db\""
mysql -h 127.0.0.1 -u root -e "create database if not exists \`$mysql_db\`"

#!/bin/sh
# Installs the ZooKeeper 3.8 server the bench starts beside etcd (Debian's
# zookeeper package, with its Java runtime). The bench only needs the
# package's jars and a java binary: it writes its own configuration into a
# temp dir and runs every server on loopback. No service is enabled.
#
#	sudo bench/install-zookeeper.sh
set -eu
if [ "$(id -u)" -ne 0 ]; then
	echo "install-zookeeper.sh: run as root (apt-get install)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends keeps the zookeeperd service package (which would
# start a server on port 2181) off the machine.
apt-get install -y -qq --no-install-recommends zookeeper default-jre-headless >/dev/null
dpkg-query -W -f='${Package} ${Version}\n' zookeeper

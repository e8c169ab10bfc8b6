#!/usr/bin/env python3
"""A round-robin TCP load balancer for trying several memvault nodes on one machine.

usage: balancer.py LISTEN_PORT BACKEND_PORT [BACKEND_PORT ...]

Each client connection goes to the next backend on 127.0.0.1 that accepts it (a node
that is down is skipped), and bytes are copied both ways until either side closes. Any
memvault node answers any request (it forwards a request to the node that serves the
account), so a balancer needs no stickiness; in production use any HTTP load balancer
(nginx, HAProxy, a cloud one) and list it in `server.trusted_proxies`.
Standard library only.
"""

import asyncio
import itertools
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def main(listen_port, backends):
    turn = itertools.cycle(range(len(backends)))

    async def handle(client_reader, client_writer):
        for _ in range(len(backends)):
            port = backends[next(turn)]
            try:
                backend_reader, backend_writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                continue
            await asyncio.gather(
                pipe(client_reader, backend_writer), pipe(backend_reader, client_writer)
            )
            return
        client_writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    asyncio.run(main(int(sys.argv[1]), [int(port) for port in sys.argv[2:]]))

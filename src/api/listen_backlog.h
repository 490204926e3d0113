// Debian's compiled cpp-httplib listens with a backlog of 5, so a burst of
// connections is reset under load. This raises the backlog of our own
// listening socket after httplib has bound it (listen() may be called again).
#pragma once

namespace plimsoll::api {

// Finds this process's listening TCP socket on `port` and calls listen()
// again with `backlog`. Returns false when no such socket was found.
bool raise_listen_backlog(int port, int backlog);

}  // namespace plimsoll::api

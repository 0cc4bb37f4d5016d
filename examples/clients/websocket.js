// Opens the launcher's WebSocket from a web page. A page cannot set an Authorization header on a WebSocket, so
// the token goes as one protocol entry, beside the API's own protocol that the server answers with.
export function openLauncherSocket(url, token) {
  const socket = new WebSocket(url, ['launcher.v1', `authorization.bearer.${token}`]);
  // 1008 (policy) from the server: the token was regenerated. A refused handshake closes with 1006, and a page
  // cannot read its 401: a fetch() with the same token tells whether the token is the reason.
  return socket;
}

// Reads a server-sent event stream in a browser with fetch, which sends the Authorization header (EventSource
// cannot send any header, and a token in the URL ends up in logs and history). Copy it into the page's code.

/**
 * Opens `url` with the token and calls `onEvent` for each event until the stream ends. The server ends it when
 * the token is regenerated: call again, and a `refused` with status 401 means the page needs the new token.
 *
 * @param {string} url
 * @param {{ token: string, onEvent: (event: { type: string, data: string, id: string }) => void, signal?: AbortSignal }} options
 * @returns {Promise<{ ended: 'closed' | 'aborted' | 'refused', status: number }>}
 */
export async function readEventStream(url, { token, onEvent, signal }) {
  let response;
  try {
    response = await fetch(url, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      cache: 'no-store',
      signal,
    });
  } catch (error) {
    if (signal?.aborted) return { ended: 'aborted', status: 0 };
    throw error;
  }
  if (!response.ok || response.body === null) {
    await response.body?.cancel();
    return { ended: 'refused', status: response.status };
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  // The event-stream format (HTML §9.2.6): `field: value` lines, an event ends at a blank line.
  let buffer = '';
  let afterCR = false;
  let event = { type: 'message', data: [], id: '' };
  const line = (text) => {
    if (text === '') {
      if (event.data.length > 0) onEvent({ type: event.type, data: event.data.join('\n'), id: event.id });
      event = { type: 'message', data: [], id: event.id };
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') event.data.push(value);
    else if (field === 'event') event.type = value;
    else if (field === 'id') event.id = value;
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { ended: 'closed', status: response.status };
      // A chunk may end between the \r and the \n of one line break: that \n ends no second line.
      const text = afterCR && value.startsWith('\n') ? value.slice(1) : value;
      afterCR = text.endsWith('\r');
      const lines = (buffer + text).split(/\r\n|\r|\n/);
      // The last part is a line not yet ended: kept for the next chunk.
      buffer = lines.pop() ?? '';
      for (const complete of lines) line(complete);
    }
  } catch (error) {
    if (signal?.aborted) return { ended: 'aborted', status: response.status };
    // The connection was cut rather than ended: the same as an end for the page.
    if (error instanceof TypeError) return { ended: 'closed', status: response.status };
    throw error;
  }
}

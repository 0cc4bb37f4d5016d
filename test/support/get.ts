// One GET over a real socket, with or without the Bearer token: the status and the body, never the token.
import { request } from 'node:http';

export function get(url: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

# Calls a launcher's automation API with its token, from PowerShell (Invoke-RestMethod).
# $env:LAUNCHER_TOKEN: the token from the launcher's settings; $env:LAUNCHER_URL: the API (default http://127.0.0.1:7878).
$base = if ($env:LAUNCHER_URL) { $env:LAUNCHER_URL } else { 'http://127.0.0.1:7878' }
if (-not $env:LAUNCHER_TOKEN) { throw "set LAUNCHER_TOKEN to the token from the launcher's settings" }
# Pasted with its "Bearer " prefix, the token still works (-replace ignores letter case).
$token = $env:LAUNCHER_TOKEN.Trim() -replace '^bearer\s+', ''
$headers = @{ Authorization = "Bearer $token" }

Invoke-RestMethod "$base/health"
try {
  Invoke-RestMethod "$base/apps" -Headers $headers
} catch {
  if ($_.Exception.Response.StatusCode.value__ -eq 401) {
    Write-Error "401: copy the token from the launcher's settings again (was it regenerated?)"
    exit 1
  }
  throw
}

// Package browser runs headless Chromium for the console's end-to-end tests:
// Debian's chromium (install-chromium, which make integration runs, installs
// it when missing), driven through chromedp, on 127.0.0.1 only (the host
// resolver and a proxy that refuses everything else), with a user data
// directory of its own that is removed once its processes are gone. Close stops the
// browser and checks that no process of it remains (its PID, and every
// process that names its user data directory, as Chromium's children do), so
// a test never leaves a browser behind. Screenshots are PNG files written to
// the test's artefacts directory, which CI keeps.
package browser

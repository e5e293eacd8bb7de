import Basics
import TerminalIO

// Every line the `passkey` command prints to standard output goes through one of these three, so that no name a
// site, a file or a QR code chose reaches the terminal raw (`Tools/lib/check-targets` refuses a bare `print(` in
// `Sources/passkey`). Raw bytes (an export, a signed file, a password asked for on standard output) are written with
// `FileHandle.standardOutput` on purpose, where they are made.

/// Text for a person: every line terminal-safe (control and bidirectional-formatting characters written as
/// `\u{XX}`). Lines a formatter already escaped pass unchanged.
func printLine(_ text: String) {
    print(text.terminalSafeLines)
}

/// A JSON document from the package's JSON writer, which escapes every control character itself.
func printJSON(_ text: String) {
    print(text)
}

/// A QR code drawn by `QRMatrix.terminalText`: its own ANSI colour escapes, and nothing a site chose.
func printQRCode(_ text: String) {
    print(text, terminator: "")
}

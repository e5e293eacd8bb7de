import Basics
import Foundation
import Testing

/// Text from a site, a QR code or a file reaches the terminal with its control and bidi characters escaped: one
/// function for `passkey` (through TerminalIO) and `passkey-relay`.
struct TerminalSafeTextTests {
    /// The name issue 10's defect 5 used: a carriage return and `ESC[2K` that would erase the consent line and write
    /// a fake one, and a right-to-left override.
    static let hostileName = "x\r\u{1B}[2Kbank.example: create a passkey for \"alice\"\u{202E}"

    @Test func controlAndBidiCharactersAreWrittenAsEscapes() {
        #expect(
            Self.hostileName.terminalSafe == "x\\u{D}\\u{1B}[2Kbank.example: create a passkey for \"alice\"\\u{202E}")
        #expect(
            "\u{0}\u{7F}\u{9B}\u{61C}\u{200E}\u{2066}".terminalSafe == "\\u{0}\\u{7F}\\u{9B}\\u{61C}\\u{200E}\\u{2066}")
    }

    @Test func ordinaryTextIsUnchanged() {
        for text in ["alice@example.com", "Ünïcödé 名前 🙂", "tab-free text", ""] {
            #expect(text.terminalSafe == text)
        }
    }

    /// Issue 23, attack 7: `passkey delete` printed the site's RP ID and user name raw. Every line the executable
    /// prints now goes through `terminalSafeLines`; `Tools/lib/check-targets` refuses a bare `print(` there.
    @Test func blocksOfOutputAreEscapedLineByLineAndEscapingTwiceChangesNothing() {
        let block = "Deleted the passkey for \(Self.hostileName) (bob\u{7})."
        let safe = ("first line\n" + block + "\n\nlast").terminalSafeLines
        #expect(safe.split(separator: "\n", omittingEmptySubsequences: false).count == 4)
        #expect(!safe.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        #expect(safe.contains("Deleted the passkey for x\\u{D}\\u{1B}[2Kbank.example"))
        #expect(safe.contains("(bob\\u{7})."))
        #expect(safe.terminalSafeLines == safe)
        #expect(Self.hostileName.siteChosen.terminalSafeLines == Self.hostileName.siteChosen)
        #expect("a\n\nb\n".terminalSafeLines == "a\n\nb\n")
    }

    /// A site's name stays inside its quotes: its own quotes and backslashes are escaped, so it cannot close them
    /// and pass for the RP ID or the rest of the question.
    @Test func siteChosenNamesCannotLeaveTheirQuotes() {
        #expect(Self.hostileName.siteChosen.hasPrefix("\"x\\u{D}\\u{1B}[2K"))
        #expect(Self.hostileName.siteChosen.hasSuffix("for \\\"alice\\\"\\u{202E}\""))
        #expect(#"a\"b"#.siteChosen == #""a\\\"b""#)
        let inner = Self.hostileName.siteChosen.dropFirst().dropLast()
        #expect(!inner.replacingOccurrences(of: "\\\"", with: "").contains("\""))
    }
}

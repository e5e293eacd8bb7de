// Text that reaches a terminal: one copy for `passkey` (through TerminalIO) and `passkey-relay`, which prints
// names from its command line and its peers' requests in its error and log lines.

import Foundation

extension String {
    /// The text with every control character (C0, DEL, C1) and bidirectional-formatting character written as
    /// `\u{XX}`, for text that came from a site, a QR code, a platform or a file before it reaches a terminal: a
    /// name holding `\r` and `ESC[2K` could otherwise rewrite the line it is on, and bidi overrides could reorder
    /// it.
    public var terminalSafe: String {
        guard unicodeScalars.contains(where: Self.isUnsafeForTerminals) else { return self }
        var result = ""
        for scalar in unicodeScalars {
            if Self.isUnsafeForTerminals(scalar) {
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Each line terminal-safe, the line breaks kept: for whole blocks of output, where a line a formatter already
    /// escaped passes unchanged (`terminalSafe` leaves its `\u{XX}` as it is).
    public var terminalSafeLines: String {
        split(separator: "\n", omittingEmptySubsequences: false).map { String($0).terminalSafe }.joined(separator: "\n")
    }

    /// A name a site or file chose, in double quotes, terminal-safe and with `"` and `\` escaped: it cannot end
    /// its quotes, so it cannot pass for the RP ID or for the rest of a question.
    public var siteChosen: String {
        let escaped = replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "\"" + escaped.terminalSafe + "\""
    }

    private static func isUnsafeForTerminals(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true  // C0, DEL, C1 (CSI and OSC among them)
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true  // bidirectional formatting
        default: false
        }
    }
}

extension QRMatrix {
    /// How `terminalText(quietZone:style:)` colours the symbol.
    public enum TerminalStyle: Hashable, Sendable, CaseIterable {
        /// Black modules on a bright white background, set with ANSI escapes on every line (`ESC[30;107m` …
        /// `ESC[0m`), so the terminal's theme cannot invert the code. Scans on light and dark terminals.
        case colored
        /// Glyphs only: a dark module is drawn in the terminal's text colour. Reads as a QR code only where text is
        /// darker than the background; for `NO_COLOR` users, pipes and files.
        case plain

        /// `.plain` when the `NO_COLOR` environment variable is set to a non-empty value (no-color.org) or the
        /// output is not a terminal, `.colored` otherwise.
        public static func preferred(environment: [String: String], isTerminal: Bool) -> TerminalStyle {
            if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return .plain }
            return isTerminal ? .colored : .plain
        }
    }

    /// The escape that starts each line of the colored style: black foreground, bright white background.
    public static let terminalColorOn = "\u{1B}[30;107m"
    /// The escape that ends each line of the colored style: all attributes reset.
    public static let terminalColorOff = "\u{1B}[0m"

    /// The symbol as lines of text, two module rows per line: `▀` dark above, `▄` dark below, `█` both, and a space
    /// for neither. Lines are separated by `\n`, with no newline after the last.
    ///
    /// `quietZone` light modules surround the symbol (0…16). Scanners read codes with a quiet zone of 2 from a
    /// terminal; the `.colored` style draws it in white, so it does not depend on the terminal's background.
    /// Throws `.parameterOutOfRange` for another quiet zone.
    public func terminalText(quietZone: Int = 2, style: TerminalStyle = .colored) throws(QRImageError) -> String {
        guard (0...16).contains(quietZone) else { throw .parameterOutOfRange(name: "quiet zone", value: quietZone) }
        let side = size + 2 * quietZone
        var lines: [String] = []
        lines.reserveCapacity((side + 1) / 2)
        for top in stride(from: 0, to: side, by: 2) {
            var line = style == .colored ? Self.terminalColorOn : ""
            for column in 0..<side {
                let x = column - quietZone
                let upper = isDark(x: x, y: top - quietZone)
                // With an odd height the last line's lower half lies outside the quiet zone: light.
                let lower = top + 1 < side && isDark(x: x, y: top + 1 - quietZone)
                let glyph =
                    switch (upper, lower) {
                    case (true, true): "█"
                    case (true, false): "▀"
                    case (false, true): "▄"
                    case (false, false): " "
                    }
                line += glyph
            }
            if style == .colored { line += Self.terminalColorOff }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

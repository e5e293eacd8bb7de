import QRImageIO
import Testing

struct TerminalRenderingTests {
    /// What a terminal shows, turned back into pixels: every character cell is one module wide and two high
    /// (`pixelsPerModule` square each), inside a margin of the terminal's own background.
    static func screenshot(
        of text: String,
        style: QRMatrix.TerminalStyle,
        terminalBackground: UInt8,
        pixelsPerModule: Int = 3,
        margin: Int = 6
    ) throws -> GrayImage {
        var rows: [[UInt8]] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var cells = Substring(line)
            var background = terminalBackground
            var foreground: UInt8 = 255 - terminalBackground  // the theme's text colour
            if style == .colored {
                #expect(cells.hasPrefix(QRMatrix.terminalColorOn) && cells.hasSuffix(QRMatrix.terminalColorOff))
                cells = cells.dropFirst(QRMatrix.terminalColorOn.count).dropLast(QRMatrix.terminalColorOff.count)
                #expect(!cells.contains("\u{1B}"))
                (background, foreground) = (255, 0)  // ESC[30;107m: black on bright white
            }
            var upper: [UInt8] = []
            var lower: [UInt8] = []
            for cell in cells {
                let (top, bottom): (Bool, Bool) =
                    switch cell {
                    case "█": (true, true)
                    case "▀": (true, false)
                    case "▄": (false, true)
                    case " ": (false, false)
                    default: throw UnexpectedCell(cell: cell)
                    }
                upper.append(top ? foreground : background)
                lower.append(bottom ? foreground : background)
            }
            rows += [upper, lower]
        }
        let columns = rows.map(\.count).max() ?? 0
        let width = (columns + 2 * margin) * pixelsPerModule
        let height = (rows.count + 2 * margin) * pixelsPerModule
        var pixels = [UInt8](repeating: terminalBackground, count: width * height)
        for (y, row) in rows.enumerated() {
            for (x, value) in row.enumerated() {
                for dy in 0..<pixelsPerModule {
                    let start = ((y + margin) * pixelsPerModule + dy) * width + (x + margin) * pixelsPerModule
                    pixels.replaceSubrange(
                        start..<(start + pixelsPerModule), with: repeatElement(value, count: pixelsPerModule))
                }
            }
        }
        return try GrayImage(width: width, height: height, pixels: pixels)
    }

    struct UnexpectedCell: Error {
        var cell: Character
    }

    /// The colored style scans whatever the terminal's background; the plain style where text is dark on light.
    @Test(arguments: [
        (QRMatrix.TerminalStyle.colored, UInt8(0)), (.colored, 255), (.colored, 40), (.plain, 255),
    ])
    func renderedTextScansBackToTheURL(style: QRMatrix.TerminalStyle, terminalBackground: UInt8) throws {
        for url in try [TestURLs.chrome] + TestURLs.generated(count: 4, seed: 7) {
            let text = try QRMatrix(encoding: url).terminalText(style: style)
            let image = try Self.screenshot(of: text, style: style, terminalBackground: terminalBackground)
            #expect(try QRImageReader.decode(image) == [url])
        }
    }

    /// Without its escapes the plain style is inverted on a dark terminal: proof that the colors are what make the
    /// colored style independent of the theme (zbar reads only dark-on-light codes).
    @Test func plainStyleOnADarkTerminalIsInverted() throws {
        let text = try QRMatrix(encoding: TestURLs.chrome).terminalText(style: .plain)
        let image = try Self.screenshot(of: text, style: .plain, terminalBackground: 0)
        #expect(try QRImageReader.decode(image) == [])
    }

    @Test func layout() throws {
        let matrix = try QRMatrix(encoding: TestURLs.chrome)  // 33 × 33
        for quietZone in [0, 1, 2, 4] {
            let side = matrix.size + 2 * quietZone
            let lines = try matrix.terminalText(quietZone: quietZone, style: .plain)
                .split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == (side + 1) / 2)
            #expect(lines.allSatisfy { $0.count == side })
            // An odd height leaves the last line's lower halves light.
            #expect(!lines.last!.contains("▄") && !lines.last!.contains("█"))
        }
        let colored = try matrix.terminalText(style: .colored).split(separator: "\n")
        #expect(
            colored.first.map(Array.init) == Array("\u{1B}[30;107m" + String(repeating: " ", count: 37) + "\u{1B}[0m"))
        // Symbol rows 0 and 1 meet the top-left finder pattern: its top edge, then its sides around light.
        #expect(colored[1].hasPrefix("\u{1B}[30;107m  █▀▀▀▀▀█ "))
        #expect(throws: QRImageError.parameterOutOfRange(name: "quiet zone", value: 17)) {
            try matrix.terminalText(quietZone: 17)
        }
    }

    @Test(arguments: [
        ([:], true, QRMatrix.TerminalStyle.colored),
        ([:], false, .plain),
        (["NO_COLOR": "1"], true, .plain),
        (["NO_COLOR": ""], true, .colored),
        (["TERM": "dumb", "NO_COLOR": "yes"], false, .plain),
    ])
    func preferredStyle(environment: [String: String], isTerminal: Bool, expected: QRMatrix.TerminalStyle) {
        #expect(QRMatrix.TerminalStyle.preferred(environment: environment, isTerminal: isTerminal) == expected)
    }
}

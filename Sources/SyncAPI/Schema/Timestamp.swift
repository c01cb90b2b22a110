/// RFC 3339 times without Foundation's formatters: parsing for validation, and the server's `modified` format
/// (UTC with milliseconds), written the same way on every platform.
public enum Timestamp {
    /// Milliseconds since 1970 for a Gregorian date and time of day.
    static func epochMilliseconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, millis: Int) -> Int64 {
        let days = daysFromCivil(year: year, month: month, day: day)
        return ((Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)) * 1000) + Int64(millis)
    }

    // Howard Hinnant's days_from_civil.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int) -> (year: Int, month: Int, day: Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    /// Formats milliseconds since 1970 as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    public static func format(epochMilliseconds ms: Int64) -> String {
        let totalSeconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let millis = Int(ms - totalSeconds * 1000)
        let days = Int(totalSeconds >= 0 ? totalSeconds / 86_400 : (totalSeconds - 86_399) / 86_400)
        let secondsOfDay = Int(totalSeconds - Int64(days) * 86_400)
        let (y, m, d) = civilFromDays(days)
        func pad(_ v: Int, _ width: Int) -> String {
            let s = String(v)
            return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secondsOfDay / 3600, 2)):\(pad(secondsOfDay / 60 % 60, 2)):"
            + "\(pad(secondsOfDay % 60, 2)).\(pad(millis, 3))Z"
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Parses a full-date `YYYY-MM-DD`; nil when malformed or not a real day.
    public static func parseDate(_ text: String) -> (year: Int, month: Int, day: Int)? {
        let b = Array(text.utf8)
        guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            let y = digits(b, 0, 4), let m = digits(b, 5, 2), let d = digits(b, 8, 2),
            (1...12).contains(m), d >= 1, d <= daysInMonth(year: y, month: m)
        else { return nil }
        return (y, m, d)
    }

    /// Parses an RFC 3339 date-time to milliseconds since 1970 (UTC); nil when malformed.
    public static func parseDateTime(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20, let date = parseDate(String(decoding: b[0..<10], as: UTF8.self)),
            b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            let hh = digits(b, 11, 2), let mm = digits(b, 14, 2), let ss = digits(b, 17, 2),
            hh < 24, mm < 60, ss <= 60
        else { return nil }
        var i = 19
        var millis = 0
        if b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") { i += 1 }
            guard i > start, i - start <= 9 else { return nil }
            let frac = b[start..<min(i, start + 3)].map { Int($0 - UInt8(ascii: "0")) }
            millis = frac.enumerated().reduce(0) { $0 + $1.element * [100, 10, 1][$1.offset] }
        }
        guard i < b.count else { return nil }
        var offsetMinutes = 0
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            guard i + 6 == b.count, b[i + 3] == UInt8(ascii: ":"), let oh = digits(b, i + 1, 2), let om = digits(b, i + 4, 2),
                oh < 24, om < 60
            else { return nil }
            offsetMinutes = (oh * 60 + om) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let local = epochMilliseconds(
            year: date.year, month: date.month, day: date.day, hour: hh, minute: mm, second: min(ss, 59), millis: millis)
        return local - Int64(offsetMinutes) * 60_000
    }

    private static func digits(_ b: [UInt8], _ start: Int, _ count: Int) -> Int? {
        guard start + count <= b.count else { return nil }
        var v = 0
        for i in start..<start + count {
            guard b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") else { return nil }
            v = v * 10 + Int(b[i] - UInt8(ascii: "0"))
        }
        return v
    }
}

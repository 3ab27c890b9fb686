#include "zkdv/store/display_filter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "zkdv/audit/verdict.h"
#include "zkdv/store/transaction_notes.h"

namespace zkdv {

namespace {

enum class FieldType { Number, Text, Flag, VerdictName, AnyTensor, NoteFlag };

struct Field {
    const char* name;
    const char* sql;
    FieldType type;
    const char* meaning;
};

// Columns of `transactions t` and of the run's `verdicts v` (NULL when not replayed).
const Field kFields[] = {
    {"index", "t.idx", FieldType::Number, "the transaction's index"},
    {"loss", "t.loss", FieldType::Number, "the recorded loss"},
    {"lr", "t.lr", FieldType::Number, "the learning rate of the first parameter group"},
    {"update_norm", "t.update_norm", FieldType::Number, "the L2 norm of the update, over every parameter"},
    {"max_update", "t.max_update", FieldType::Number, "the largest absolute update element"},
    {"segment", "t.segment", FieldType::Number, "the replay segment (snapshot interval) the transaction is in"},
    {"sampled", "(t.has_deltas OR t.has_state_digest)", FieldType::Flag, "the tape carries sampled checks for it"},
    {"deltas", "t.has_deltas", FieldType::Flag, "the tape carries its full deltas"},
    {"state_digest", "t.has_state_digest", FieldType::Flag, "the tape carries a state digest after it"},
    {"replayed", "(v.idx IS NOT NULL)", FieldType::Flag, "the run replayed it"},
    {"verdict", "v.verdict", FieldType::VerdictName, "exact, within-tolerance, diverged or unverifiable"},
    {"worst_ulp", "v.worst_max_ulp", FieldType::Number, "the largest ULP distance of its comparisons"},
    {"worst_rel", "v.worst_rel_l2", FieldType::Number, "the largest relative L2 error of its comparisons"},
    {"worst_tensor", "v.worst_tensor", FieldType::Text, "the tensor of its worst comparison"},
    {"tensor", nullptr, FieldType::AnyTensor, "any tensor the run compared for it (tensor contains \"fc\")"},
    {"run", "v.run_id", FieldType::Number, "the replay run whose verdict is shown"},
    {"disagree",
     "(SELECT count(DISTINCT d.verdict) FROM verdicts d JOIN replay_runs r ON r.id = d.run_id WHERE r.tape_id = ?1 AND d.idx = t.idx) > 1",
     FieldType::Flag, "runs of the tape that replayed it reached different verdicts"},
    // The auditor's note on the transaction (zkdv/store/transaction_notes.h); none when it has none.
    {"flag", "coalesce((SELECT n.flag FROM transaction_notes n WHERE n.tape_id = ?1 AND n.idx = t.idx), 'none')", FieldType::NoteFlag,
     "the auditor's flag: none, question, suspicious or confirmed"},
    {"flagged", "EXISTS (SELECT 1 FROM transaction_notes n WHERE n.tape_id = ?1 AND n.idx = t.idx AND n.flag != 'none')", FieldType::Flag,
     "the auditor flagged it (any flag but none)"},
    {"note", "coalesce((SELECT n.note FROM transaction_notes n WHERE n.tape_id = ?1 AND n.idx = t.idx), '')", FieldType::Text,
     "the auditor's note on it (\"\" when none)"},
};

const Field* fieldNamed(const std::string& name)
{
    for (const Field& field : kFields)
        if (name == field.name)
            return &field;
    return nullptr;
}

enum class Kind { Identifier, Number, String, Operator, End };

struct Token {
    Kind kind = Kind::End;
    std::string text;  // the identifier, the string's contents, the operator, the number as written
    double number = 0;
    std::size_t position = 0;  // 1-based
};

std::vector<Token> tokenize(const std::string& text)
{
    std::vector<Token> tokens;
    std::size_t i = 0;
    while (i < text.size()) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (std::isspace(c)) {
            ++i;
            continue;
        }
        Token token;
        token.position = i + 1;
        if (std::isalpha(c) || c == '_') {
            std::size_t end = i;
            // Verdict names hold a hyphen (within-tolerance); a minus sign needs spaces around it.
            while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' || text[end] == '-' || text[end] == '.'))
                ++end;
            token.kind = Kind::Identifier;
            token.text = text.substr(i, end - i);
            i = end;
            if (token.text == "and" || token.text == "or" || token.text == "not") {
                token.kind = Kind::Operator;
                token.text = token.text == "and" ? "&&" : token.text == "or" ? "||" : "!";
            } else if (token.text == "contains") {
                token.kind = Kind::Operator;
            }
        } else if (std::isdigit(c) || ((c == '-' || c == '+' || c == '.') && i + 1 < text.size() &&
                                       (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '.'))) {
            const char* start = text.c_str() + i;
            char* end = nullptr;
            token.number = std::strtod(start, &end);
            if (end == start)
                throw DisplayFilterError("not a number", token.position);
            token.kind = Kind::Number;
            token.text = text.substr(i, static_cast<std::size_t>(end - start));
            i += static_cast<std::size_t>(end - start);
            if (!std::isfinite(token.number))
                throw DisplayFilterError("the number " + token.text + " is out of range", token.position);
        } else if (c == '"' || c == '\'') {
            const std::size_t close = text.find(static_cast<char>(c), i + 1);
            if (close == std::string::npos)
                throw DisplayFilterError("the string has no closing quote", token.position);
            token.kind = Kind::String;
            token.text = text.substr(i + 1, close - i - 1);
            i = close + 1;
        } else {
            // "-" only so that a range "10 - 19" tokenizes (as the plain search it is); no filter uses it.
            static const char* const kOperators[] = {"==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", "=", "-"};
            bool found = false;
            for (const char* op : kOperators)
                if (text.compare(i, std::char_traits<char>::length(op), op) == 0) {
                    token.kind = Kind::Operator;
                    token.text = std::string(op) == "=" ? "==" : op;
                    i += std::char_traits<char>::length(op);
                    found = true;
                    break;
                }
            if (!found)
                throw DisplayFilterError(std::string("unexpected '") + text[i] + "'", token.position);
        }
        tokens.push_back(std::move(token));
    }
    Token end;
    end.position = text.size() + 1;
    tokens.push_back(end);
    return tokens;
}

std::string describe(const Token& token)
{
    switch (token.kind) {
    case Kind::End: return "the end of the filter";
    case Kind::String: return "\"" + token.text + "\"";
    default: return "'" + token.text + "'";
    }
}

class Compiler {
public:
    Compiler(std::vector<Token> tokens, int firstParameter) : tokens_(std::move(tokens)), nextParameter_(firstParameter) {}

    CompiledDisplayFilter run()
    {
        if (peek().kind == Kind::End)
            throw DisplayFilterError("the filter is empty", peek().position);
        const Sql sql = orExpression();
        if (peek().kind != Kind::End)
            throw DisplayFilterError("expected && or || before " + describe(peek()), peek().position);
        result_.sql = sql.compound ? "(" + sql.text + ")" : sql.text;
        return std::move(result_);
    }

    // The filter nests at most this many groups and negations inside each other.
    static constexpr int kMaxDepth = 64;

private:
    // SQL for part of the filter. SQLite's parser keeps a stack of at most 100 pending
    // symbols (3.40; "parser stack overflow" past it): every group and negation the SQL
    // nests costs at least one, every operand left of one more. So && and || chains are
    // flat ("a AND b AND c", never "((a AND b) AND c)"), a negation adds no parentheses
    // (NOT binds looser than a comparison and tighter than AND), and in each chain the most
    // deeply nested operand comes first, where nothing is pending beside it. The order of a
    // chain's operands does not change its value; parameters keep their numbers.
    struct Sql {
        std::string text;
        int depth = 0;          // groups and negations nested inside
        bool compound = false;  // a chain of more than one operand (needs parentheses inside another)
    };

    const Token& peek() const { return tokens_[at_]; }
    const Token& take() { return tokens_[at_ < tokens_.size() - 1 ? at_++ : at_]; }
    bool takeOperator(const char* op)
    {
        if (peek().kind == Kind::Operator && peek().text == op) {
            take();
            return true;
        }
        return false;
    }

    // Joins a chain's operands with `op`, the most deeply nested first.
    static Sql chain(std::vector<Sql> operands, const char* op)
    {
        if (operands.size() == 1)
            return std::move(operands.front());
        std::size_t deepest = 0;
        for (std::size_t i = 1; i < operands.size(); ++i)
            if (operands[i].depth > operands[deepest].depth)
                deepest = i;
        std::rotate(operands.begin(), operands.begin() + static_cast<std::ptrdiff_t>(deepest),
                    operands.begin() + static_cast<std::ptrdiff_t>(deepest) + 1);
        Sql joined;
        joined.compound = true;
        for (const Sql& operand : operands) {
            joined.text += (joined.text.empty() ? "" : std::string(" ") + op + " ") + operand.text;
            joined.depth = std::max(joined.depth, operand.depth);
        }
        return joined;
    }

    Sql orExpression()
    {
        std::vector<Sql> operands;
        operands.push_back(andExpression());
        while (takeOperator("||"))
            operands.push_back(andExpression());
        // An && chain inside an || chain needs no parentheses: AND binds tighter.
        return chain(std::move(operands), "OR");
    }

    Sql andExpression()
    {
        std::vector<Sql> operands;
        operands.push_back(unary());
        while (takeOperator("&&"))
            operands.push_back(unary());
        return chain(std::move(operands), "AND");
    }

    Sql unary()
    {
        const Token& token = peek();
        if (token.kind == Kind::Operator && (token.text == "!" || token.text == "(")) {
            if (++depth_ > kMaxDepth)
                throw DisplayFilterError("the filter nests more than " + std::to_string(kMaxDepth) + " levels", 1);
            Sql sql;
            if (takeOperator("!")) {
                Sql operand = unary();
                sql.text = "NOT " + (operand.compound ? "(" + operand.text + ")" : operand.text);
                sql.depth = operand.depth + 1;
            } else {
                take();
                Sql inner = orExpression();
                if (!takeOperator(")"))
                    throw DisplayFilterError("expected ')' before " + describe(peek()), peek().position);
                sql.text = "(" + inner.text + ")";
                sql.depth = inner.depth + 1;
            }
            --depth_;
            return sql;
        }
        return Sql{comparison(), 0, false};
    }

    std::string parameter(std::variant<double, std::string> value)
    {
        result_.values.push_back(std::move(value));
        return "?" + std::to_string(nextParameter_++);
    }

    std::string comparison()
    {
        const Token& name = take();
        if (name.kind != Kind::Identifier)
            throw DisplayFilterError("expected a field name (index, loss, verdict, tensor, ...) before " + describe(name), name.position);
        const Field* field = fieldNamed(name.text);
        if (!field)
            throw DisplayFilterError("no field named '" + name.text + "'; fields: " + fieldList(), name.position);
        if (field->type == FieldType::Flag) {
            if (peek().kind == Kind::Operator && peek().text != "&&" && peek().text != "||" && peek().text != ")")
                throw DisplayFilterError("'" + name.text + "' is true or false: write " + name.text + " or !" + name.text, peek().position);
            return "coalesce(" + std::string(field->sql) + ", 0)";
        }
        const Token& op = take();
        static const char* const kComparisons[] = {"==", "!=", "<", "<=", ">", ">=", "contains"};
        bool comparisonOperator = false;
        for (const char* candidate : kComparisons)
            comparisonOperator = comparisonOperator || (op.kind == Kind::Operator && op.text == candidate);
        if (!comparisonOperator)
            throw DisplayFilterError("expected a comparison (==, !=, <, <=, >, >=, contains) after '" + name.text + "', found " + describe(op),
                                     op.position);
        const Token& value = take();
        switch (field->type) {
        case FieldType::Number: {
            if (op.text == "contains")
                throw DisplayFilterError("'" + name.text + "' is a number: compare it with ==, !=, <, <=, > or >=", op.position);
            if (value.kind != Kind::Number)
                throw DisplayFilterError("'" + name.text + "' is compared with a number, not " + describe(value), value.position);
            const std::string sqlOp = op.text == "==" ? "=" : op.text;
            return "coalesce(" + std::string(field->sql) + " " + sqlOp + " " + parameter(value.number) + ", 0)";
        }
        case FieldType::VerdictName: {
            if (op.text != "==" && op.text != "!=")
                throw DisplayFilterError("a verdict is compared with == or !=", op.position);
            if ((value.kind != Kind::Identifier && value.kind != Kind::String) || !verdictFromName(value.text))
                throw DisplayFilterError("a verdict is exact, within-tolerance, diverged or unverifiable, not " + describe(value), value.position);
            return "coalesce(v.verdict " + std::string(op.text == "==" ? "=" : "!=") + " " + parameter(value.text) + ", 0)";
        }
        case FieldType::NoteFlag: {
            if (op.text != "==" && op.text != "!=")
                throw DisplayFilterError("a flag is compared with == or !=", op.position);
            if ((value.kind != Kind::Identifier && value.kind != Kind::String) || !transactionFlagFromName(value.text))
                throw DisplayFilterError("a flag is none, question, suspicious or confirmed, not " + describe(value), value.position);
            return std::string(field->sql) + (op.text == "==" ? " = " : " != ") + parameter(value.text);
        }
        case FieldType::Text:
        case FieldType::AnyTensor: {
            if (op.text != "==" && op.text != "!=" && op.text != "contains")
                throw DisplayFilterError("'" + name.text + "' is text: compare it with ==, != or contains", op.position);
            if (value.kind != Kind::Identifier && value.kind != Kind::String)
                throw DisplayFilterError("'" + name.text + "' is compared with a name or a quoted string, not " + describe(value), value.position);
            const std::string column = field->type == FieldType::AnyTensor ? "m.tensor" : field->sql;
            std::string condition;
            if (op.text == "contains")
                condition = "instr(lower(" + column + "), lower(" + parameter(value.text) + ")) > 0";
            else
                condition = column + (op.text == "==" ? " = " : " != ") + parameter(value.text);
            if (field->type == FieldType::AnyTensor)
                // Any of the transaction's comparisons in the run (the metrics' key starts run, index).
                return "EXISTS (SELECT 1 FROM metrics m WHERE m.run_id = v.run_id AND m.idx = t.idx AND " + condition + ")";
            return "coalesce(" + condition + ", 0)";
        }
        case FieldType::Flag:
            break;
        }
        return "0";
    }

    static std::string fieldList()
    {
        std::string list;
        for (const Field& field : kFields)
            list += (list.empty() ? "" : ", ") + std::string(field.name);
        return list;
    }

    std::vector<Token> tokens_;
    std::size_t at_ = 0;
    int depth_ = 0;  // groups and negations open around the current token
    int nextParameter_;
    CompiledDisplayFilter result_;
};

}  // namespace

CompiledDisplayFilter compileDisplayFilter(const std::string& text, int firstParameter)
{
    // Bounded: a hostile or mistyped filter cannot recurse the parser off its stack (the
    // compiler counts nesting as it goes: `not` and `(` alike, `!=` not at all).
    constexpr std::size_t kMaxLength = 4096;
    if (text.size() > kMaxLength)
        throw DisplayFilterError("the filter is longer than " + std::to_string(kMaxLength) + " characters", kMaxLength + 1);
    return Compiler(tokenize(text), firstParameter).run();
}

bool looksLikeDisplayFilter(const std::string& text)
{
    std::vector<Token> tokens;
    try {
        tokens = tokenize(text);
    } catch (const DisplayFilterError&) {
        return true;  // so that the user learns what is wrong with it
    }
    for (const Token& token : tokens)
        if (token.kind == Kind::Operator && token.text != "-")
            return true;
    // A lone flag (`sampled`, `replayed`) filters; a lone word otherwise is a text search.
    if (tokens.size() == 2 && tokens[0].kind == Kind::Identifier)
        if (const Field* field = fieldNamed(tokens[0].text))
            return field->type == FieldType::Flag;
    return false;
}

const std::vector<DisplayFilterField>& displayFilterFields()
{
    static const std::vector<DisplayFilterField> fields = [] {
        std::vector<DisplayFilterField> list;
        for (const Field& field : kFields)
            list.push_back({field.name, field.meaning});
        return list;
    }();
    return fields;
}

std::vector<std::string> displayFilterComparisons(const std::string& name)
{
    const Field* field = fieldNamed(name);
    if (!field)
        return {};
    switch (field->type) {
    case FieldType::Number: return {"==", "!=", "<", "<=", ">", ">="};
    case FieldType::VerdictName:
    case FieldType::NoteFlag: return {"==", "!="};
    case FieldType::Text:
    case FieldType::AnyTensor: return {"==", "!=", "contains"};
    case FieldType::Flag: break;
    }
    return {};
}

}  // namespace zkdv

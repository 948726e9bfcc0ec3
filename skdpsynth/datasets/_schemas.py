"""Public schemas of the real datasets, written from their published documentation.

Nothing here is computed from the data. Category lists and bounds come from:

* Adult -- ``adult.names`` (UCI dataset 2, Kohavi & Becker 1996): the category
  lists verbatim, the extraction conditions ``AAGE>16``, ``AFNLWGT>1``,
  ``HRSWK>0``; other bounds are generous, documented choices (see comments).
* UCI dropout -- the variable table of UCI dataset 697 (Realinho et al. 2022,
  *Data* 7(11):146): the code lists of every coded variable, the documented
  ranges of grades (0-200 and 0-20) and of the application order (0-9).
* UCI HESP -- the attribute table of UCI dataset 856 (Yilmaz & Sekeroglu 2019):
  the code list of each of the 30 questionnaire attributes and of GRADE.
* OULAD -- Kuzilek, Hlosta & Zdrahal (2017), *Scientific Data* 4:170171 and the
  dataset's online description (module and presentation codes, regions,
  education levels, IMD bands, age bands, results).

Where the documentation gives no bound, a generous round bound that does not
depend on the data is chosen and stated in a comment.
"""

from __future__ import annotations

from skdpsynth.schema import ColumnSpec, TableSchema

__all__ = [
    "adult_schema",
    "uci_dropout_schema",
    "uci_hesp_schema",
    "oulad_student_info_schema",
    "ADULT_COLUMNS",
    "UCI_DROPOUT_CODEBOOK",
    "UCI_HESP_CODEBOOK",
    "OULAD_MODULES",
    "OULAD_PRESENTATIONS",
    "OULAD_ACTIVITY_TYPES_ALL",
]


# =============================================================================== Adult (UCI 2)
ADULT_COLUMNS: tuple[str, ...] = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income",
)

# Category lists copied from adult.names, in the order given there.
_ADULT_CATEGORIES: dict[str, tuple[str, ...]] = {
    "workclass": ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                  "Without-pay", "Never-worked"),
    "education": ("Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc", "9th",
                  "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool"),
    "marital-status": ("Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"),
    "occupation": ("Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial", "Prof-specialty",
                   "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical", "Farming-fishing", "Transport-moving",
                   "Priv-house-serv", "Protective-serv", "Armed-Forces"),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": ("United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
                       "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba", "Iran",
                       "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal",
                       "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia",
                       "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador",
                       "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands"),
    # adult.names: ">50K, <=50K." (the test file's labels carry a trailing "." that the loader strips)
    "income": ("<=50K", ">50K"),
}
# adult.names: unknown values were converted to "?" (read as missing). Every feature is declared
# nullable (the published files have unknowns in workclass, occupation and native-country); the label is not.
_ADULT_NUMERIC = {
    # extraction condition AAGE>16; no upper bound is documented: 100 is a generous human bound
    "age": ("integer", 17, 100),
    # extraction condition AFNLWGT>1; no upper bound documented: 2,000,000 is a generous bound for a
    # CPS person weight (people represented by one record)
    "fnlwgt": ("integer", 1, 2_000_000),
    # one code per education level: adult.names lists 16 levels
    "education-num": ("integer", 1, 16),
    # the CPS income fields are 5-digit amounts (top code 99,999); used for both capital columns
    "capital-gain": ("integer", 0, 99_999),
    "capital-loss": ("integer", 0, 99_999),
    # extraction condition HRSWK>0; a week has 168 hours
    "hours-per-week": ("integer", 1, 168),
}


def adult_schema() -> TableSchema:
    """Public schema of UCI Adult (from ``adult.names``)."""
    cols = []
    for name in ADULT_COLUMNS:
        if name in _ADULT_NUMERIC:
            kind, lo, hi = _ADULT_NUMERIC[name]
            cols.append(ColumnSpec(name, kind, lower=lo, upper=hi, nullable=True))
        else:
            cols.append(ColumnSpec(name, "categorical", categories=_ADULT_CATEGORIES[name],
                                   nullable=name != "income"))
    return TableSchema(tuple(cols))


# =============================================================================== UCI dropout (UCI 697)
# code -> meaning, from the UCI 697 variable table.
_QUALIFICATION_PARENT = {
    1: "Secondary Education - 12th Year of Schooling or Eq.", 2: "Higher Education - Bachelor's Degree",
    3: "Higher Education - Degree", 4: "Higher Education - Master's", 5: "Higher Education - Doctorate",
    6: "Frequency of Higher Education", 9: "12th Year of Schooling - Not Completed",
    10: "11th Year of Schooling - Not Completed", 11: "7th Year (Old)", 12: "Other - 11th Year of Schooling",
    14: "10th Year of Schooling", 18: "General commerce course",
    19: "Basic Education 3rd Cycle (9th/10th/11th Year) or Equiv.", 22: "Technical-professional course",
    26: "7th year of schooling", 27: "2nd cycle of the general high school course",
    29: "9th Year of Schooling - Not Completed", 30: "8th year of schooling", 34: "Unknown",
    35: "Can't read or write", 36: "Can read without having a 4th year of schooling",
    37: "Basic education 1st cycle (4th/5th year) or equiv.",
    38: "Basic Education 2nd Cycle (6th/7th/8th Year) or Equiv.", 39: "Technological specialization course",
    40: "Higher education - degree (1st cycle)", 41: "Specialized higher studies course",
    42: "Professional higher technical course", 43: "Higher Education - Master (2nd cycle)",
    44: "Higher Education - Doctorate (3rd cycle)",
}
_QUALIFICATION_FATHER = dict(_QUALIFICATION_PARENT)
_QUALIFICATION_FATHER.update({
    13: "2nd year complementary high school course", 20: "Complementary High School Course",
    25: "Complementary High School Course - not concluded", 31: "General Course of Administration and Commerce",
    33: "Supplementary Accounting and Administration",
})
_OCCUPATION_COMMON = {
    0: "Student",
    1: "Representatives of the Legislative Power and Executive Bodies, Directors, Directors and Executive Managers",
    2: "Specialists in Intellectual and Scientific Activities", 3: "Intermediate Level Technicians and Professions",
    4: "Administrative staff", 5: "Personal Services, Security and Safety Workers and Sellers",
    6: "Farmers and Skilled Workers in Agriculture, Fisheries and Forestry",
    7: "Skilled Workers in Industry, Construction and Craftsmen",
    8: "Installation and Machine Operators and Assembly Workers", 9: "Unskilled Workers",
    10: "Armed Forces Professions", 90: "Other Situation", 99: "(blank)",
}
_OCCUPATION_MOTHER = dict(_OCCUPATION_COMMON)
_OCCUPATION_MOTHER.update({
    122: "Health professionals", 123: "teachers",
    125: "Specialists in information and communication technologies (ICT)",
    131: "Intermediate level science and engineering technicians and professions",
    132: "Technicians and professionals, of intermediate level of health",
    134: "Intermediate level technicians from legal, social, sports, cultural and similar services",
    141: "Office workers, secretaries in general and data processing operators",
    143: "Data, accounting, statistical, financial services and registry-related operators",
    144: "Other administrative support staff", 151: "personal service workers", 152: "sellers",
    153: "Personal care workers and the like",
    171: "Skilled construction workers and the like, except electricians",
    173: "Skilled workers in printing, precision instrument manufacturing, jewelers, artisans and the like",
    175: "Workers in food processing, woodworking, clothing and other industries and crafts",
    191: "cleaning workers", 192: "Unskilled workers in agriculture, animal production, fisheries and forestry",
    193: "Unskilled workers in extractive industry, construction, manufacturing and transport",
    194: "Meal preparation assistants",
})
_OCCUPATION_FATHER = dict(_OCCUPATION_COMMON)
_OCCUPATION_FATHER.update({
    101: "Armed Forces Officers", 102: "Armed Forces Sergeants", 103: "Other Armed Forces personnel",
    112: "Directors of administrative and commercial services",
    114: "Hotel, catering, trade and other services directors",
    121: "Specialists in the physical sciences, mathematics, engineering and related techniques",
    122: "Health professionals", 123: "teachers",
    124: "Specialists in finance, accounting, administrative organization, public and commercial relations",
    131: "Intermediate level science and engineering technicians and professions",
    132: "Technicians and professionals, of intermediate level of health",
    134: "Intermediate level technicians from legal, social, sports, cultural and similar services",
    135: "Information and communication technology technicians",
    141: "Office workers, secretaries in general and data processing operators",
    143: "Data, accounting, statistical, financial services and registry-related operators",
    144: "Other administrative support staff", 151: "personal service workers", 152: "sellers",
    153: "Personal care workers and the like", 154: "Protection and security services personnel",
    161: "Market-oriented farmers and skilled agricultural and animal production workers",
    163: "Farmers, livestock keepers, fishermen, hunters and gatherers, subsistence",
    171: "Skilled construction workers and the like, except electricians",
    172: "Skilled workers in metallurgy, metalworking and similar",
    174: "Skilled workers in electricity and electronics",
    175: "Workers in food processing, woodworking, clothing and other industries and crafts",
    181: "Fixed plant and machine operators", 182: "assembly workers",
    183: "Vehicle drivers and mobile equipment operators",
    192: "Unskilled workers in agriculture, animal production, fisheries and forestry",
    193: "Unskilled workers in extractive industry, construction, manufacturing and transport",
    194: "Meal preparation assistants", 195: "Street vendors (except food) and street food vendors",
})
_YES_NO = {1: "yes", 0: "no"}

#: Code lists of the coded (categorical) variables of UCI 697, from its variable table.
UCI_DROPOUT_CODEBOOK: dict[str, dict[int, str]] = {
    "Marital status": {1: "single", 2: "married", 3: "widower", 4: "divorced", 5: "facto union",
                       6: "legally separated"},
    "Application mode": {
        1: "1st phase - general contingent", 2: "Ordinance No. 612/93",
        5: "1st phase - special contingent (Azores Island)", 7: "Holders of other higher courses",
        10: "Ordinance No. 854-B/99", 15: "International student (bachelor)",
        16: "1st phase - special contingent (Madeira Island)", 17: "2nd phase - general contingent",
        18: "3rd phase - general contingent", 26: "Ordinance No. 533-A/99, item b2) (Different Plan)",
        27: "Ordinance No. 533-A/99, item b3 (Other Institution)", 39: "Over 23 years old", 42: "Transfer",
        43: "Change of course", 44: "Technological specialization diploma holders",
        51: "Change of institution/course", 53: "Short cycle diploma holders",
        57: "Change of institution/course (International)",
    },
    "Course": {
        33: "Biofuel Production Technologies", 171: "Animation and Multimedia Design",
        8014: "Social Service (evening attendance)", 9003: "Agronomy", 9070: "Communication Design",
        9085: "Veterinary Nursing", 9119: "Informatics Engineering", 9130: "Equinculture", 9147: "Management",
        9238: "Social Service", 9254: "Tourism", 9500: "Nursing", 9556: "Oral Hygiene",
        9670: "Advertising and Marketing Management", 9773: "Journalism and Communication",
        9853: "Basic Education", 9991: "Management (evening attendance)",
    },
    "Daytime/evening attendance": {1: "daytime", 0: "evening"},
    "Previous qualification": {
        1: "Secondary education", 2: "Higher education - bachelor's degree", 3: "Higher education - degree",
        4: "Higher education - master's", 5: "Higher education - doctorate", 6: "Frequency of higher education",
        9: "12th year of schooling - not completed", 10: "11th year of schooling - not completed",
        12: "Other - 11th year of schooling", 14: "10th year of schooling",
        15: "10th year of schooling - not completed",
        19: "Basic education 3rd cycle (9th/10th/11th year) or equiv.",
        38: "Basic education 2nd cycle (6th/7th/8th year) or equiv.", 39: "Technological specialization course",
        40: "Higher education - degree (1st cycle)", 42: "Professional higher technical course",
        43: "Higher education - master (2nd cycle)",
    },
    "Nacionality": {
        1: "Portuguese", 2: "German", 6: "Spanish", 11: "Italian", 13: "Dutch", 14: "English", 17: "Lithuanian",
        21: "Angolan", 22: "Cape Verdean", 24: "Guinean", 25: "Mozambican", 26: "Santomean", 32: "Turkish",
        41: "Brazilian", 62: "Romanian", 100: "Moldova (Republic of)", 101: "Mexican", 103: "Ukrainian",
        105: "Russian", 108: "Cuban", 109: "Colombian",
    },
    "Mother's qualification": _QUALIFICATION_PARENT,
    "Father's qualification": _QUALIFICATION_FATHER,
    "Mother's occupation": _OCCUPATION_MOTHER,
    "Father's occupation": _OCCUPATION_FATHER,
    "Displaced": _YES_NO,
    "Educational special needs": _YES_NO,
    "Debtor": _YES_NO,
    "Tuition fees up to date": _YES_NO,
    "Gender": {1: "male", 0: "female"},
    "Scholarship holder": _YES_NO,
    "International": _YES_NO,
}

UCI_DROPOUT_COLUMNS: tuple[str, ...] = (
    "Marital status", "Application mode", "Application order", "Course", "Daytime/evening attendance",
    "Previous qualification", "Previous qualification (grade)", "Nacionality", "Mother's qualification",
    "Father's qualification", "Mother's occupation", "Father's occupation", "Admission grade", "Displaced",
    "Educational special needs", "Debtor", "Tuition fees up to date", "Gender", "Scholarship holder",
    "Age at enrollment", "International",
    "Curricular units 1st sem (credited)", "Curricular units 1st sem (enrolled)",
    "Curricular units 1st sem (evaluations)", "Curricular units 1st sem (approved)",
    "Curricular units 1st sem (grade)", "Curricular units 1st sem (without evaluations)",
    "Curricular units 2nd sem (credited)", "Curricular units 2nd sem (enrolled)",
    "Curricular units 2nd sem (evaluations)", "Curricular units 2nd sem (approved)",
    "Curricular units 2nd sem (grade)", "Curricular units 2nd sem (without evaluations)",
    "Unemployment rate", "Inflation rate", "GDP", "Target",
)

_UCI_DROPOUT_NUMERIC: dict[str, tuple[str, float, float]] = {
    # documented: "between 0 - first choice; and 9 last choice"
    "Application order": ("integer", 0, 9),
    # documented: "between 0 and 200"
    "Previous qualification (grade)": ("continuous", 0, 200),
    "Admission grade": ("continuous", 0, 200),
    # not documented: generous human bounds for enrolment in higher education
    "Age at enrollment": ("integer", 15, 100),
    # documented: macro-economic rates in percent; no bounds given -> generous round bounds (Portugal's
    # unemployment never exceeded 20 % in the data's period, inflation and GDP growth stayed within +-10 %)
    "Unemployment rate": ("continuous", 0, 50),
    "Inflation rate": ("continuous", -20, 20),
    "GDP": ("continuous", -20, 20),
}
for _sem in ("1st", "2nd"):
    # counts of curricular units: not documented; 50 per semester is a generous bound (a full-time semester is
    # 30 ECTS, i.e. about 5-8 units), evaluations can repeat: 100
    for _part in ("credited", "enrolled", "approved", "without evaluations"):
        _UCI_DROPOUT_NUMERIC[f"Curricular units {_sem} sem ({_part})"] = ("integer", 0, 50)
    _UCI_DROPOUT_NUMERIC[f"Curricular units {_sem} sem (evaluations)"] = ("integer", 0, 100)
    # documented: grade average "between 0 and 20" (Portuguese 0-20 scale)
    _UCI_DROPOUT_NUMERIC[f"Curricular units {_sem} sem (grade)"] = ("continuous", 0, 20)

UCI_DROPOUT_TARGET_CLASSES: tuple[str, ...] = ("Dropout", "Enrolled", "Graduate")


def uci_dropout_schema() -> TableSchema:
    """Public schema of UCI 697 (column names with surrounding whitespace stripped)."""
    cols = []
    for name in UCI_DROPOUT_COLUMNS:
        if name == "Target":
            cols.append(ColumnSpec(name, "categorical", categories=UCI_DROPOUT_TARGET_CLASSES, nullable=False))
        elif name in _UCI_DROPOUT_NUMERIC:
            kind, lo, hi = _UCI_DROPOUT_NUMERIC[name]
            cols.append(ColumnSpec(name, kind, lower=lo, upper=hi, nullable=False))
        else:
            cols.append(ColumnSpec(name, "categorical", categories=tuple(UCI_DROPOUT_CODEBOOK[name]),
                                   nullable=False))
    return TableSchema(tuple(cols))


# =============================================================================== UCI HESP (UCI 856)
#: (description, {code: meaning}) of each column, from the UCI 856 attribute table.
UCI_HESP_CODEBOOK: dict[str, tuple[str, dict[int, str]]] = {
    "1": ("Student age", {1: "18-21", 2: "22-25", 3: "above 26"}),
    "2": ("Sex", {1: "female", 2: "male"}),
    "3": ("Graduated high-school type", {1: "private", 2: "state", 3: "other"}),
    "4": ("Scholarship type", {1: "None", 2: "25%", 3: "50%", 4: "75%", 5: "Full"}),
    "5": ("Additional work", {1: "Yes", 2: "No"}),
    "6": ("Regular artistic or sports activity", {1: "Yes", 2: "No"}),
    "7": ("Do you have a partner", {1: "Yes", 2: "No"}),
    "8": ("Total salary if available", {1: "USD 135-200", 2: "USD 201-270", 3: "USD 271-340", 4: "USD 341-410",
                                        5: "above 410"}),
    "9": ("Transportation to the university", {1: "Bus", 2: "Private car/taxi", 3: "bicycle", 4: "Other"}),
    "10": ("Accommodation type in Cyprus", {1: "rental", 2: "dormitory", 3: "with family", 4: "Other"}),
    "11": ("Mother's education", {1: "primary school", 2: "secondary school", 3: "high school", 4: "university",
                                  5: "MSc.", 6: "Ph.D."}),
    "12": ("Father's education", {1: "primary school", 2: "secondary school", 3: "high school", 4: "university",
                                  5: "MSc.", 6: "Ph.D."}),
    "13": ("Number of sisters/brothers", {1: "1", 2: "2", 3: "3", 4: "4", 5: "5 or above"}),
    "14": ("Parental status", {1: "married", 2: "divorced", 3: "died - one of them or both"}),
    "15": ("Mother's occupation", {1: "retired", 2: "housewife", 3: "government officer",
                                   4: "private sector employee", 5: "self-employment", 6: "other"}),
    "16": ("Father's occupation", {1: "retired", 2: "government officer", 3: "private sector employee",
                                   4: "self-employment", 5: "other"}),
    "17": ("Weekly study hours", {1: "None", 2: "<5 hours", 3: "6-10 hours", 4: "11-20 hours",
                                  5: "more than 20 hours"}),
    "18": ("Reading frequency (non-scientific books/journals)", {1: "None", 2: "Sometimes", 3: "Often"}),
    "19": ("Reading frequency (scientific books/journals)", {1: "None", 2: "Sometimes", 3: "Often"}),
    "20": ("Attendance to the seminars/conferences related to the department", {1: "Yes", 2: "No"}),
    "21": ("Impact of your projects/activities on your success", {1: "positive", 2: "negative", 3: "neutral"}),
    "22": ("Attendance to classes", {1: "always", 2: "sometimes", 3: "never"}),
    "23": ("Preparation to midterm exams 1", {1: "alone", 2: "with friends", 3: "not applicable"}),
    "24": ("Preparation to midterm exams 2", {1: "closest date to the exam", 2: "regularly during the semester",
                                              3: "never"}),
    "25": ("Taking notes in classes", {1: "never", 2: "sometimes", 3: "always"}),
    "26": ("Listening in classes", {1: "never", 2: "sometimes", 3: "always"}),
    "27": ("Discussion improves my interest and success in the course", {1: "never", 2: "sometimes",
                                                                         3: "always"}),
    "28": ("Flip-classroom", {1: "not useful", 2: "useful", 3: "not applicable"}),
    "29": ("Cumulative grade point average in the last semester (/4.00)",
           {1: "<2.00", 2: "2.00-2.49", 3: "2.50-2.99", 4: "3.00-3.49", 5: "above 3.49"}),
    "30": ("Expected cumulative grade point average in the graduation (/4.00)",
           {1: "<2.00", 2: "2.00-2.49", 3: "2.50-2.99", 4: "3.00-3.49", 5: "above 3.49"}),
    "GRADE": ("Output grade", {0: "Fail", 1: "DD", 2: "DC", 3: "CC", 4: "CB", 5: "BB", 6: "BA", 7: "AA"}),
}


def uci_hesp_schema() -> TableSchema:
    """Public schema of UCI 856 (without the ``STUDENT ID`` identifier)."""
    cols = [ColumnSpec(str(i), "categorical", categories=tuple(UCI_HESP_CODEBOOK[str(i)][1]), nullable=False)
            for i in range(1, 31)]
    # The attribute table gives no code list for COURSE ID: a generous integer range (not read from the data)
    # keeps every course code without revealing which codes occur.
    cols.append(ColumnSpec("COURSE ID", "integer", lower=1, upper=99, nullable=False))
    cols.append(ColumnSpec("GRADE", "categorical", categories=tuple(UCI_HESP_CODEBOOK["GRADE"][1]), nullable=False))
    return TableSchema(tuple(cols))


# =============================================================================== OULAD
#: The seven modules (AAA-GGG) and four presentations (B = February, J = October starts) of OULAD.
OULAD_MODULES: tuple[str, ...] = ("AAA", "BBB", "CCC", "DDD", "EEE", "FFF", "GGG")
OULAD_PRESENTATIONS: tuple[str, ...] = ("2013B", "2013J", "2014B", "2014J")
#: The VLE activity types of vle.csv's ``activity_type`` (OULAD documentation).
OULAD_ACTIVITY_TYPES_ALL: tuple[str, ...] = (
    "dataplus", "dualpane", "externalquiz", "folder", "forumng", "glossary", "homepage", "htmlactivity",
    "oucollaborate", "oucontent", "ouelluminate", "ouwiki", "page", "questionnaire", "quiz", "repeatactivity",
    "resource", "sharedsubpage", "subpage", "url",
)
OULAD_REGIONS: tuple[str, ...] = (
    "East Anglian Region", "East Midlands Region", "Ireland", "London Region", "North Region",
    "North Western Region", "Scotland", "South East Region", "South Region", "South West Region", "Wales",
    "West Midlands Region", "Yorkshire Region",
)
OULAD_EDUCATION: tuple[str, ...] = (
    "No Formal quals", "Lower Than A Level", "A Level or Equivalent", "HE Qualification",
    "Post Graduate Qualification",
)
# Index of Multiple Deprivation band of the student's place of residence (deciles). The published file
# writes the second band as "10-20" (no "%"); the loader normalises it to "10-20%".
OULAD_IMD_BANDS: tuple[str, ...] = tuple(f"{10 * i}-{10 * (i + 1)}%" for i in range(10))
OULAD_AGE_BANDS: tuple[str, ...] = ("0-35", "35-55", "55<=")
OULAD_FINAL_RESULTS: tuple[str, ...] = ("Distinction", "Pass", "Fail", "Withdrawn")

OULAD_STUDENT_INFO_COLUMNS: tuple[str, ...] = (
    "code_module", "code_presentation", "gender", "region", "highest_education", "imd_band", "age_band",
    "num_of_prev_attempts", "studied_credits", "disability", "final_result",
)


def oulad_student_info_schema() -> TableSchema:
    """Public schema of OULAD ``studentInfo`` (without the ``id_student`` identifier)."""
    return TableSchema((
        ColumnSpec("code_module", "categorical", categories=OULAD_MODULES, nullable=False),
        ColumnSpec("code_presentation", "categorical", categories=OULAD_PRESENTATIONS, nullable=False),
        ColumnSpec("gender", "categorical", categories=("M", "F"), nullable=False),
        ColumnSpec("region", "categorical", categories=OULAD_REGIONS, nullable=False),
        ColumnSpec("highest_education", "categorical", categories=OULAD_EDUCATION, nullable=False),
        # the documentation notes that the IMD band is unknown for some students
        ColumnSpec("imd_band", "categorical", categories=OULAD_IMD_BANDS, nullable=True),
        ColumnSpec("age_band", "categorical", categories=OULAD_AGE_BANDS, nullable=False),
        # number of times the student has attempted this module: undocumented bound, 20 is generous
        ColumnSpec("num_of_prev_attempts", "integer", lower=0, upper=20, nullable=False),
        # total credits of the modules studied at the same time: OU modules are 30-120 credits; 1,000 is a
        # generous undocumented bound
        ColumnSpec("studied_credits", "integer", lower=0, upper=1000, nullable=False),
        ColumnSpec("disability", "categorical", categories=("N", "Y"), nullable=False),
        ColumnSpec("final_result", "categorical", categories=OULAD_FINAL_RESULTS, nullable=False),
    ))
